/**
 * The node agent on a real host: a real Slurm 22.05 whose slurmstepd puts
 * jobs into real cgroup v1 hierarchies (proctrack/cgroup, task/cgroup), the
 * real /proc and the real /sys/fs/cgroup. Only sysfs is synthetic (there is no
 * HCA here): job processes hold stand-in character devices at /dev/infiniband/uverbsN
 * (nodes at the numbers of /dev/full, /dev/loop-control …: the agent knows a holder by
 * device number), and the synthetic class/infiniband_verbs maps those uverbs
 * numbers, and device numbers, to HCAs whose numbers differ from them.
 *
 * Jobs: a batch step holding one HCA, a job whose two srun steps hold another,
 * a job running as another uid, two jobs sharing a fourth HCA, and a process
 * outside Slurm holding a fifth. The agent is the built command, run as a user
 * would run it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeCounters, writeHca } from '../../src/demo/nodetree.js';
import { parseExposition, select, valueOf } from '../support/exposition.js';
import { REAL_SLURM_START_TIMEOUT_MS, realSlurmGate, startRealSlurm, type RealSlurm } from '../support/real-slurm.js';
import {
  expectCredited,
  jobIdsOn,
  portTable,
  scrape,
  startNodeAgentProcess,
  statusOf,
  unreadableOutsideJobs,
  waitForJobGone,
  type AgentProcess,
} from '../support/node-agent-process.js';
import { run, stopChild, waitFor } from '../support/tools.js';
import { leaseStandIns, mknodStandIn, pickStandIns, type StandIn } from '../support/stand-in-devices.js';

const gate = realSlurmGate();
const BIN = path.resolve('dist/src/cli/main.js');
const DEV_DIR = '/dev/infiniband';
const HCAS = ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3', 'mlx5_4'] as const;
type Hca = (typeof HCAS)[number];
/** uverbs index = base + this offset: never the HCA's own number. */
const UVERBS_OFFSET: Record<Hca, number> = { mlx5_0: 3, mlx5_1: 0, mlx5_2: 4, mlx5_3: 1, mlx5_4: 2 };
/** A process that opens the file named by its first argument and keeps it open. */
const HOLD = `exec 3<"$0"; exec sleep 900`;
/** Jobs start, cycles run every second: a minute is ample even on a loaded machine. */
const WAIT_MS = 60_000;
/** sstat answers from the stepd's last poll (every 10 s), which a loaded machine can put off for long. */
const SSTAT_WAIT_MS = 180_000;

/** Stand-ins for /dev/infiniband/uverbsN at numbers no real device uses; removed by `remove`. */
class StandInDevices {
  readonly base: number;
  private readonly madeDir: boolean;
  private readonly standIns: Record<Hca, StandIn>;

  constructor() {
    this.madeDir = !fs.existsSync(DEV_DIR);
    fs.mkdirSync(DEV_DIR, { recursive: true });
    const picked = pickStandIns(HCAS.length);
    this.standIns = Object.fromEntries(HCAS.map((h, i) => [h, picked[i]])) as Record<Hca, StandIn>;
    // mknod refuses an existing name: a set another run (of this test, or another Slurm's) holds is never shared.
    let base = 40;
    while (!this.createAll(base)) base += 10;
    this.base = base;
  }

  /** Creates the five files at `base`, or none of them (false) when one exists already. */
  private createAll(base: number): boolean {
    const made: string[] = [];
    for (const h of HCAS) {
      try {
        mknodStandIn(this.pathAt(base + UVERBS_OFFSET[h]), this.standIns[h]);
        made.push(this.pathAt(base + UVERBS_OFFSET[h]));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        for (const f of made) fs.rmSync(f, { force: true });
        return false;
      }
    }
    return true;
  }

  private pathAt(n: number): string {
    return `${DEV_DIR}/uverbs${n}`;
  }

  /** The device number the stand-in of `h` has. */
  dev(h: Hca): string {
    return this.standIns[h].dev;
  }

  uverbs(h: Hca): number {
    return this.base + UVERBS_OFFSET[h];
  }

  path(h: Hca): string {
    return this.pathAt(this.uverbs(h));
  }

  remove(): void {
    for (const h of HCAS) fs.rmSync(this.path(h), { force: true });
    if (this.madeDir) fs.rmSync(DEV_DIR, { recursive: true, force: true });
  }
}

/**
 * What /proc says, read here independently of the agent: PIDs whose fd links point at `file`,
 * among `ours` only (this cluster's job processes and the test's own outsider), so nothing another
 * Slurm on the host runs can count.
 */
function holdersOf(file: string, ours: (pid: number) => boolean): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || !ours(Number(name))) continue;
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${name}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (fs.readlinkSync(`/proc/${name}/fd/${fd}`) === file) {
          out.push(Number(name));
          break;
        }
      } catch {
        /* closed meanwhile, or unreadable: not a holder we can name */
      }
    }
  }
  return out;
}

/** Whether the process is in a job cgroup of one of this cluster's nodes (slurm_<node>/…). */
function inJobsOf(slurm: RealSlurm, pid: number): boolean {
  try {
    const cgroups = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8');
    return slurm.nodes.some((node) => cgroups.includes(`/slurm_${node}/`));
  } catch {
    return false;
  }
}

/** A job's own directory under a v1 controller on `node` (jobs here run as root). */
function jobDir(controller: string, node: string, id: string): string {
  return `/sys/fs/cgroup/${controller}/slurm_${node}/uid_0/job_${id}`;
}

/** A v1 cgroup file as a number (a keyed file: the value of `key`). */
function cgroupValue(file: string, key?: string): number {
  const text = fs.readFileSync(file, 'utf8');
  if (key === undefined) return Number(text.trim());
  const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
  if (!m) throw new Error(`${file} has no ${key}: ${text}`);
  return Number(m[1]);
}

/** oom_kill of a v1 memory cgroup and every cgroup below it (v1 counts a kill only where the limit was hit). */
function oomKillsBelow(dir: string, depth = 0): number {
  const subs = depth < 3 ? fs.readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory()) : [];
  return (
    cgroupValue(`${dir}/memory.oom_control`, 'oom_kill') +
    subs.reduce((sum, d) => sum + oomKillsBelow(path.join(dir, d.name), depth + 1), 0)
  );
}

/** sstat's MaxRSS of a step in bytes (it prints e.g. 204800K), or undefined while it has none. */
function maxRssBytes(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)([KMG]?)$/.exec(text.trim());
  if (!m) return undefined;
  return Number(m[1]) * { '': 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30 }[m[2] as '' | 'K' | 'M' | 'G'];
}

/** sstat's CPU time ([DD-][HH:]MM:SS[.mmm]) in seconds. */
function cpuSeconds(text: string): number {
  const [days, rest] = text.includes('-') ? (text.split('-') as [string, string]) : ['0', text];
  return rest.split(':').reduce((acc, part) => acc * 60 + Number(part), 0) + Number(days) * 86_400;
}

const MIB = 2 ** 20;
/**
 * Perl is in every Debian (perl-base). vec() grows one buffer of N MiB and zero-fills it, so every
 * page is touched, and no copy doubles it (as `$x = "a" x N` would, through its temporary).
 */
const ALLOCATE = (mib: number): string => `perl -e 'vec($x, ${mib} * 1048576 - 1, 8) = 1; sleep 900'`;
/**
 * Burns 2.7 s of CPU time (its own, by times: a loaded machine only takes longer), then sleeps.
 * Half a second off the whole: sstat shows whole seconds, cut down, so a burn of exactly 2 s that
 * Slurm measured at 1.99 s would read 1 and never reach the agent's 2. The test waits for
 * BURNT_S: `times` counts in clock ticks, which can run ahead of the cgroup's exact count (a burn
 * that stopped at 2.5 s by `times` left cpuacct at 2.4998 s), and an agent's reading of at least
 * BURNT_S taken during the burn's last moments is still within 0.05 s of the cgroup's final figure.
 */
const BURN = `perl -e '1 while (times)[0] + (times)[1] < 2.7'; exec sleep 900`;
const BURNT_S = 2.65;

/** The job cgroup directories (any controller) of this cluster's nodes. */
function jobCgroupRoots(slurm: RealSlurm): string[] {
  const out: string[] = [];
  for (const controller of fs.readdirSync('/sys/fs/cgroup')) {
    for (const node of slurm.nodes) {
      const dir = `/sys/fs/cgroup/${controller}/slurm_${node}`;
      if (fs.existsSync(dir)) out.push(dir);
    }
  }
  return out;
}

describe.skipIf(gate.skip)(
  'node agent on real Slurm job cgroups (cgroup v1) and the real /proc',
  { timeout: 90_000 },
  () => {
    let slurm: RealSlurm;
    let releaseStandIns: (() => void) | undefined;
    let devices: StandInDevices;
    let sysfs: string;
    let outsider: ChildProcess | undefined;
    let agent: AgentProcess | undefined;
    /** This cluster's job processes and the test's outsider: the only holders the test counts. */
    const ours = (pid: number): boolean => pid === outsider?.pid || inJobsOf(slurm, pid);
    const job: Record<'batch' | 'steps' | 'otherUid' | 'sharedA' | 'sharedB', string> = {
      batch: '',
      steps: '',
      otherUid: '',
      sharedA: '',
      sharedB: '',
    };

    async function sbatch(node: string, ...args: string[]): Promise<string> {
      const partition = node === slurm.nodes[0] ? 'cpu' : 'gpu';
      const { stdout } = await slurm.run([
        'sbatch',
        '--parsable',
        '-o',
        '/dev/null',
        '-e',
        '/dev/null',
        '-p',
        partition,
        '-w',
        node,
        ...args,
      ]);
      return stdout.trim().split(';')[0] as string;
    }

    function counters(device: Hca, words: number): void {
      writeCounters(sysfs, device, 1, { port_xmit_data: words, port_rcv_data: words * 2 }, 'counters');
    }

    beforeAll(async () => {
      // jobacct_gather/cgroup: slurmstepd also puts jobs under cpuacct (CPU time), and sstat answers.
      // ConstrainCores=yes: each job also gets a cpuset of the cores Slurm gave it (ib_slurm_job_cpus_allocated).
      slurm = await startRealSlurm({
        instance: 'cg',
        cgroup: 'v1',
        nodes: 2,
        env: { REAL_SLURM_JOBACCT: 'cgroup', REAL_SLURM_CONSTRAIN_CORES: 'yes' },
      });
      releaseStandIns = await leaseStandIns();
      devices = new StandInDevices();
      sysfs = fs.mkdtempSync('/tmp/slurm-otel-cg-sysfs-');
      for (const [i, name] of HCAS.entries()) {
        writeHca(sysfs, {
          name,
          uverbs: devices.uverbs(name),
          dev: devices.dev(name),
          ports: [
            {
              linkLayer: 'InfiniBand',
              rate: '200 Gb/sec (4X HDR)',
              counters: { port_xmit_data: 1000 * (i + 1), port_rcv_data: 7 },
              hwCounters: { packet_seq_err: 2 },
            },
          ],
        });
      }
      const [n1, n2] = slurm.nodes as [string, string];
      job.batch = await sbatch(n1, '--mem=100', '--wrap', `exec 3<${devices.path('mlx5_0')}; exec sleep 900`);
      const twoSteps = path.join(slurm.stateDir, 'work', 'two-steps.sh');
      fs.writeFileSync(
        twoSteps,
        [
          '#!/bin/bash',
          ...[0, 1].map(() => `srun -n1 --overlap --mem=50 sh -c '${HOLD}' ${devices.path('mlx5_1')} &`),
          'wait',
          '',
        ].join('\n'),
        { mode: 0o755 },
      );
      job.steps = await sbatch(n1, '-n2', '--mem=200', twoSteps);
      job.otherUid = await sbatch(
        n2,
        '--uid=65534',
        '--mem=100',
        '--wrap',
        `exec 3<${devices.path('mlx5_2')}; exec sleep 900`,
      );
      job.sharedA = await sbatch(n1, '--mem=100', '--wrap', `exec 3<${devices.path('mlx5_3')}; exec sleep 900`);
      job.sharedB = await sbatch(n2, '--mem=100', '--wrap', `exec 3<${devices.path('mlx5_3')}; exec sleep 900`);
      outsider = spawn('sh', ['-c', HOLD, devices.path('mlx5_4')], { stdio: 'ignore' });
      // Every holder has its file open: one batch process, two step tasks, and so on.
      const want: Record<Hca, number> = { mlx5_0: 1, mlx5_1: 2, mlx5_2: 1, mlx5_3: 2, mlx5_4: 1 };
      await waitFor(
        'every job process to hold its stand-in device',
        () => (HCAS.every((h) => holdersOf(devices.path(h), ours).length === want[h]) ? true : undefined),
        WAIT_MS,
      );
    }, REAL_SLURM_START_TIMEOUT_MS);

    // A safety net: the last test cleans up and checks it; this runs when an earlier one failed.
    afterAll(async () => {
      await cleanUp();
    }, 120_000);

    let cleaned = false;
    async function cleanUp(): Promise<void> {
      if (cleaned) return;
      cleaned = true;
      if (agent) await stopChild(agent.child);
      if (outsider) await stopChild(outsider);
      await slurm?.stop();
      devices?.remove();
      releaseStandIns?.();
      if (sysfs) fs.rmSync(sysfs, { recursive: true, force: true });
    }

    it('finds the jobs in the real v1 cgroups that slurmstepd made', () => {
      const roots = jobCgroupRoots(slurm);
      expect(roots.map((r) => r.split('/')[4]).sort()).toEqual(expect.arrayContaining(['freezer', 'memory']));
      for (const id of Object.values(job)) {
        expect(
          roots.some((r) => fs.readdirSync(r).some((uid) => fs.existsSync(path.join(r, uid, `job_${id}`)))),
          `job_${id}`,
        ).toBe(true);
      }
    });

    it('with ignore-outside-jobs: exact attribution, device_jobs and job series on the real /proc', async () => {
      agent = await startNodeAgentProcess(['--sysfs-root', sysfs, '--unreadable-processes', 'ignore-outside-jobs']);
      const samples = await waitFor(
        'the attribution of every port',
        async () => {
          const s = await scrape(agent!);
          return statusOf(s, 'mlx5_3') === 'shared' && statusOf(s, 'mlx5_0') === 'sole' ? s : undefined;
        },
        WAIT_MS,
      );
      const ports = portTable(samples, HCAS);
      expect(ports.status, agent.stderr()).toEqual({
        mlx5_0: 'sole',
        mlx5_1: 'sole',
        mlx5_2: 'sole',
        mlx5_3: 'shared',
        mlx5_4: 'nonjob',
      });
      expect(ports.jobs).toEqual({ mlx5_0: 1, mlx5_1: 1, mlx5_2: 1, mlx5_3: 2, mlx5_4: 0 });
      expect(jobIdsOn(samples, 'ib_slurm_job_transmit_bytes_total', 'mlx5_0')).toEqual([job.batch]);
      expect(jobIdsOn(samples, 'ib_slurm_job_transmit_bytes_total', 'mlx5_1')).toEqual([job.steps]);
      expect(jobIdsOn(samples, 'ib_slurm_job_transmit_bytes_total', 'mlx5_2')).toEqual([job.otherUid]);
      expect(jobIdsOn(samples, 'ib_slurm_job_transmit_bytes_total', 'mlx5_3')).toEqual([]);
      expect(jobIdsOn(samples, 'ib_slurm_job_transmit_bytes_total', 'mlx5_4')).toEqual([]);
      expect(jobIdsOn(samples, 'ib_slurm_job_device_attributed', 'mlx5_3')).toEqual([job.sharedA, job.sharedB].sort());
      expect(select(samples, 'ib_slurm_job_device_attributed', { device: 'mlx5_3' }).map((s) => s.value)).toEqual([
        0, 0,
      ]);
      // Holders are named as their own /proc/<pid>/comm names them (the agent reads the name from
      // the stat it reads anyway).
      const page = await (await fetch(agent.url.replace(/\/metrics$/, '/'))).text();
      for (const pid of [...holdersOf(devices.path('mlx5_4'), ours), ...holdersOf(devices.path('mlx5_0'), ours)]) {
        const comm = fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
        expect(page, `PID ${pid}`).toContain(`${pid} ${comm}`);
      }
      // The two srun steps and the batch step of one job are one job: its process count covers all three.
      expect(valueOf(samples, 'ib_slurm_job_processes', { job_id: job.steps })).toBeGreaterThanOrEqual(3);
      expect(valueOf(samples, 'ib_slurm_job_processes', { job_id: job.otherUid })).toBeGreaterThanOrEqual(1);
    });

    it('job series count what the port counted while the job was its sole user', async () => {
      await expectCredited(
        agent!,
        { jobId: job.batch, device: 'mlx5_0' },
        1000,
        () => counters('mlx5_0', 1000 + 250),
        WAIT_MS,
      );
    });

    it('scancel: the job series are gone and the port goes idle', async () => {
      await slurm.run(['scancel', job.batch]);
      const s = await waitForJobGone(agent!, job.batch, 'mlx5_0', WAIT_MS);
      expect(valueOf(s, 'ib_slurm_device_jobs', { device: 'mlx5_0', port: '1' })).toBe(0);
      expect(holdersOf(devices.path('mlx5_0'), ours)).toEqual([]);
    });

    it('a shared port that becomes sole starts its job series at 0', async () => {
      counters('mlx5_3', 50_000);
      await slurm.run(['scancel', job.sharedB]);
      const s = await waitFor(
        'the shared port to become sole',
        async () => {
          const got = await scrape(agent!);
          return statusOf(got, 'mlx5_3') === 'sole' ? got : undefined;
        },
        WAIT_MS,
      );
      expect(jobIdsOn(s, 'ib_slurm_job_transmit_bytes_total', 'mlx5_3')).toEqual([job.sharedA]);
      expect(valueOf(s, 'ib_slurm_job_transmit_bytes_total', { job_id: job.sharedA, device: 'mlx5_3' })).toBe(0);
      expect(valueOf(s, 'ib_slurm_device_transmit_bytes_total', { device: 'mlx5_3', port: '1' })).toBe(200_000);
      counters('mlx5_3', 50_010);
      await waitFor(
        'the newly sole job to be credited 40 bytes',
        async () =>
          valueOf(await scrape(agent!), 'ib_slurm_job_transmit_bytes_total', {
            job_id: job.sharedA,
            device: 'mlx5_3',
          }) === 40
            ? true
            : undefined,
        WAIT_MS,
      );
    });

    it('per-job CPU, memory and OOM kills agree with the job cgroup files and with sstat', async () => {
      const n2 = slurm.nodes[1] as string;
      // Room on the second node (4 CPUs) for three more one-CPU jobs: only the job of another uid stays.
      await slurm.run(['scancel', job.sharedB], { check: false });
      const burn = await sbatch(n2, '--mem=100', '--wrap', BURN);
      const hold = await sbatch(n2, '--mem=400', '--wrap', ALLOCATE(200));
      // In an srun step limited to 50 MiB, the allocation is killed; the step's shell goes on until
      // the test lets it end, then Slurm removes the step's cgroup (where v1 counted the kill) while
      // the job's batch shell, and the job cgroup, stay.
      const stepEnd = path.join(slurm.stateDir, 'work', 'oom-step-end');
      const oomStep = path.join(slurm.stateDir, 'work', 'oom-step.sh');
      fs.writeFileSync(
        oomStep,
        ['#!/bin/bash', `${ALLOCATE(200)}`, `while [ ! -e ${stepEnd} ]; do sleep 0.2; done`, ''].join('\n'),
        { mode: 0o755 },
      );
      const oom = await sbatch(n2, '--mem=100', '--wrap', `srun --mem=50 ${oomStep}; exec sleep 900`);
      const cpuOf = (id: string): number =>
        ['usage_user', 'usage_sys'].reduce(
          (sum, f) => sum + cgroupValue(`${jobDir('cpuacct', n2, id)}/cpuacct.${f}`) / 1e9,
          0,
        );
      // Each job has done what it does: its CPU burnt, 200 MiB held, the allocation killed.
      let seen = 'nothing read yet';
      const done = (): true | undefined => {
        try {
          const figures = [
            cpuOf(burn),
            cgroupValue(`${jobDir('memory', n2, hold)}/memory.usage_in_bytes`) / MIB,
            oomKillsBelow(jobDir('memory', n2, oom)),
          ] as const;
          seen = `CPU ${figures[0]} s, memory ${figures[1]} MiB, oom_kill ${figures[2]}`;
          return figures[0] >= BURNT_S && figures[1] >= 200 && figures[2] >= 1 ? true : undefined;
        } catch (e) {
          seen = String(e); // not started yet
          return undefined;
        }
      };
      await waitFor('the three jobs to burn, hold and be OOM-killed', done, WAIT_MS).catch((e: Error) => {
        throw new Error(`${e.message}: last seen ${seen}`);
      });
      const name = (n: string): string => `ib_slurm_job_${n}`;
      // A scrape serves the last cycle's reading, which may predate the above: wait until the agent's
      // cycle has seen all of it (a cycle read mid-burn showed 2.43 s on a loaded machine).
      const s = await waitFor(
        'the agent to export the three jobs done',
        async () => {
          const got = await scrape(agent!);
          const cpu =
            (valueOf(got, name('cpu_user_seconds_total'), { job_id: burn }) ?? 0) +
            (valueOf(got, name('cpu_system_seconds_total'), { job_id: burn }) ?? 0);
          return cpu >= BURNT_S &&
            (valueOf(got, name('memory_used_bytes'), { job_id: hold }) ?? 0) >= 200 * MIB &&
            (valueOf(got, name('oom_kills_total'), { job_id: oom }) ?? 0) >= 1
            ? got
            : undefined;
        },
        WAIT_MS,
      );
      const agentCpu =
        (valueOf(s, name('cpu_user_seconds_total'), { job_id: burn }) ?? NaN) +
        (valueOf(s, name('cpu_system_seconds_total'), { job_id: burn }) ?? NaN);
      const fileCpu = cpuOf(burn);
      // The job is asleep after the burn: its cgroup's CPU time barely moves between the two readings.
      expect(agentCpu).toBeGreaterThanOrEqual(BURNT_S);
      expect(Math.abs(agentCpu - fileCpu), `agent ${agentCpu} s, cpuacct ${fileCpu} s`).toBeLessThan(0.1);
      // The burn, the shell and slurmstepd: no more than 0.8 s beyond the 2.7 s burnt.
      expect(agentCpu).toBeLessThan(3.5);

      const mem = valueOf(s, name('memory_used_bytes'), { job_id: hold }) ?? NaN;
      const memFile = cgroupValue(`${jobDir('memory', n2, hold)}/memory.usage_in_bytes`);
      expect(mem).toBeGreaterThanOrEqual(200 * MIB);
      expect(Math.abs(mem - memFile), `agent ${mem}, usage_in_bytes ${memFile}`).toBeLessThan(8 * MIB);
      expect(mem).toBeLessThan(264 * MIB);
      expect(valueOf(s, name('memory_peak_bytes'), { job_id: hold })).toBeGreaterThanOrEqual(mem - 8 * MIB);
      expect(valueOf(s, name('memory_limit_bytes'), { job_id: hold })).toBe(400 * MIB);
      // The job's limit; the step's own (50 MiB) is below it.
      expect(valueOf(s, name('memory_limit_bytes'), { job_id: oom })).toBe(100 * MIB);
      expect(valueOf(s, name('memory_limit_bytes'), { job_id: hold })).toBe(
        cgroupValue(`${jobDir('memory', n2, hold)}/memory.limit_in_bytes`),
      );

      const kills = valueOf(s, name('oom_kills_total'), { job_id: oom });
      expect(kills).toBeGreaterThanOrEqual(1);
      expect(kills).toBe(oomKillsBelow(jobDir('memory', n2, oom)));
      expect(valueOf(s, name('oom_kills_total'), { job_id: hold })).toBe(0);

      // The step ends and its cgroup goes: the files below the job now sum to fewer kills (none), the
      // agent's counter for the job keeps them.
      fs.writeFileSync(stepEnd, '');
      const steplessDir = jobDir('memory', n2, oom);
      await waitFor(
        "Slurm to remove the OOM-killed step's cgroup",
        () => (fs.readdirSync(steplessDir).some((d) => d.startsWith('step_0')) ? undefined : true),
        WAIT_MS,
      );
      const filesAfter = oomKillsBelow(steplessDir);
      expect(filesAfter, 'v1 keeps the kill only in the step cgroup').toBeLessThan(kills as number);
      const cycles = async (): Promise<number> =>
        valueOf(parseExposition(await (await fetch(agent!.monitoringUrl)).text()), 'ib_slurm_exporter_cycles_total') ??
        0;
      const cyclesNow = await cycles();
      await waitFor(
        'two agent cycles after the step cgroup went',
        async () => ((await cycles()) >= cyclesNow + 2 ? true : undefined),
        WAIT_MS,
      );
      const after = await scrape(agent!);
      expect(valueOf(after, name('oom_kills_total'), { job_id: oom })).toBe(kills);

      // ConstrainCores=yes: the CPUs of each job's cpuset, as the cpuset files list them.
      const cpusetCount = (node: string, id: string): number =>
        fs
          .readFileSync(`${jobDir('cpuset', node, id)}/cpuset.cpus`, 'utf8')
          .trim()
          .split(',')
          .reduce((n, r) => n + (r.includes('-') ? Number(r.split('-')[1]) - Number(r.split('-')[0]) + 1 : 1), 0);
      const n1 = slurm.nodes[0] as string;
      expect(valueOf(s, name('cpus_allocated'), { job_id: burn })).toBe(cpusetCount(n2, burn));
      expect(valueOf(s, name('cpus_allocated'), { job_id: job.steps })).toBe(cpusetCount(n1, job.steps));
      // A one-CPU job's cpuset is one CPU; the two-task job's is the two Slurm gave it where the host
      // has them (all nodes here declare 4 CPUs on one host, and Slurm maps their cores onto its CPUs).
      expect(cpusetCount(n2, burn)).toBe(1);
      expect(cpusetCount(n1, job.steps)).toBe(Math.min(2, os.cpus().length));

      // explain --job: the same usage against the allocation (cpuset, memory limit).
      const explain = async (id: string): Promise<string> => {
        const r = await run(process.execPath, [BIN, 'explain', '--job', id, '--sysfs-root', sysfs]);
        expect(r.code, r.stderr).toBe(0);
        return r.stdout;
      };
      expect(await explain(burn)).toMatch(/^cpu: \d+\.\d s over \d+\.\d s on 1 CPU = \d+\.\d %$/m);
      expect(await explain(hold)).toMatch(/^memory: peak 2\d\d\.\d MiB of 400\.0 MiB = 5\d\.\d %$/m);

      // Slurm's own accounting of the batch steps (jobacct_gather/cgroup, asked of the running stepd).
      const sstat = async (id: string): Promise<string[]> =>
        (await slurm.run(['sstat', '-n', '-P', '-j', `${id}.batch`, '--format=MaxRSS,MinCPU'])).stdout
          .trim()
          .split('|');
      const [rss] = await waitFor(
        'sstat to report the holding job',
        async () => {
          const got = await sstat(hold);
          return (maxRssBytes(got[0] ?? '') ?? 0) >= 200 * MIB ? got : undefined;
        },
        SSTAT_WAIT_MS,
      );
      // MaxRSS counts the processes' resident pages; the cgroup also charges their page cache and the stepd.
      expect(Math.abs(mem - (maxRssBytes(rss ?? '') ?? NaN)), `MaxRSS ${rss}`).toBeLessThan(48 * MIB);
      let lastSstat: string[] = [];
      const [, cpu] = await waitFor(
        'sstat to report the burning job',
        async () => {
          lastSstat = await sstat(burn);
          // Its figure is the stepd's last poll (every JobAcctGatherFrequency): wait until it has seen the burn.
          return cpuSeconds(lastSstat[1] ?? '') >= Math.floor(agentCpu) ? lastSstat : undefined;
        },
        SSTAT_WAIT_MS,
      ).catch((e: Error) => {
        throw new Error(`${e.message}; sstat said ${JSON.stringify(lastSstat)}, the agent ${agentCpu} s`);
      });
      // sstat shows whole seconds; MinCPU is the one task's CPU time (the batch script and its children).
      expect(Math.abs(agentCpu - cpuSeconds(cpu ?? '')), `sstat MinCPU ${cpu}`).toBeLessThanOrEqual(1);
      await slurm.run(['scancel', burn, hold, oom]);
    }, 420_000);

    it('strict (the default): an unreadable process outside the jobs suppresses every job series', async () => {
      const r = await run(process.execPath, [BIN, 'node', '--once', '--sysfs-root', sysfs, '--log-format', 'plain']);
      expect(r.code, r.stderr).toBe(0);
      const samples = parseExposition(r.stdout);
      const hidden = unreadableOutsideJobs();
      if (hidden.length > 0) {
        // Root cannot read these fd tables (an LSM, a protected init): any of them might hold an HCA.
        expect(HCAS.map((h) => statusOf(samples, h))).toEqual(HCAS.map(() => 'incomplete'));
        expect(select(samples, 'ib_slurm_job_transmit_bytes_total')).toEqual([]);
        expect(select(samples, 'ib_slurm_job_counters_total')).toEqual([]);
        expect(r.stderr).toContain(`pid=${hidden[0]}`);
      } else {
        expect(statusOf(samples, 'mlx5_1')).toBe('sole');
      }
    });

    it('cleans up every process, cgroup and file it made', async () => {
      const stepdHolders = HCAS.flatMap((h) => holdersOf(devices.path(h), ours));
      expect(stepdHolders.length).toBeGreaterThan(0);
      await cleanUp();
      expect(stepdHolders.filter((pid) => fs.existsSync(`/proc/${pid}`))).toEqual([]);
      expect(jobCgroupRoots(slurm)).toEqual([]);
      expect(HCAS.filter((h) => fs.existsSync(devices.path(h)))).toEqual([]);
      expect(fs.existsSync(sysfs)).toBe(false);
    });
  },
);
