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
      slurm = await startRealSlurm({ instance: 'cg', cgroup: 'v1', nodes: 2 });
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
