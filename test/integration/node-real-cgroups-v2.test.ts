/**
 * The node agent on a real Slurm 26.05 (Debian's, in the project's chroot) whose slurmstepd puts
 * jobs into cgroup v2 directories, the real /proc and the real /sys/fs/cgroup (the host's cgroup2
 * hierarchy, mounted at the chroot's /sys/fs/cgroup by up.sh). Only sysfs is synthetic (there is
 * no HCA here). Twice, one cluster each: with 26.05's default, directories named by SLUID
 * (`system.slice/<node>_slurmstepd.scope/s<13 chars>/step_<S>/…`), and with cgroup.conf's
 * `CgroupJobIdPaths=yes` (26.05.2+; up.sh refuses it, naming the version, on an older slurmd),
 * `job_<id>` directories under the same scope.
 *
 * The jobs run inside the chroot and hold stand-in character devices through the chroot's /dev:
 * read from the host their fd links say `<chroot>/dev/infiniband/uverbsN`, so only the device
 * number (stat of the fd, matched against sysfs `uverbsN/dev`) tells what they hold. Each stand-in
 * is a distinct real device (nodes at the numbers of /dev/full, /dev/loop-control …).
 *
 * mlx5_0: a batch step (which also holds a regular file named after mlx5_4's uverbs number);
 * mlx5_1: two srun steps of one job; mlx5_2: two jobs; mlx5_3: a process on the host, outside
 * Slurm; mlx5_4: nobody. Cluster, node names and first job id are new for each run, and none of
 * its cgroup directories may exist before it starts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeCounters, writeHca } from '../../src/demo/nodetree.js';
import { deviceNumber } from '../../src/node/read/roots.js';
import { select, valueOf, type Sample } from '../support/exposition.js';
import { REAL_SLURM_START_TIMEOUT_MS, realSlurmGate, startRealSlurm, type RealSlurm } from '../support/real-slurm.js';
import {
  holdersOfDevice,
  leaseStandIns,
  mknodStandIn,
  pickStandIns,
  type StandIn,
} from '../support/stand-in-devices.js';
import {
  expectCredited,
  jobIdsOn,
  portTable,
  scrape,
  startNodeAgentProcess,
  statusOf,
  waitForJobGone,
  type AgentProcess,
} from '../support/node-agent-process.js';
import { run, stopChild, waitFor } from '../support/tools.js';

const gate = realSlurmGate('26.05');
const BIN = path.resolve('dist/src/cli/main.js');
const DEV_DIR = '/dev/infiniband';
/** Where the host sees the cgroup2 hierarchy that the chroot sees at /sys/fs/cgroup. */
const UNIFIED = '/sys/fs/cgroup/unified';
const HCAS = ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3', 'mlx5_4'] as const;
type Hca = (typeof HCAS)[number];
/** uverbs index = base + this offset: never the HCA's own number. */
const UVERBS_OFFSET: Record<Hca, number> = { mlx5_0: 2, mlx5_1: 4, mlx5_2: 0, mlx5_3: 1, mlx5_4: 3 };
const HOLD = `exec 3<"$0"; exec sleep 900`;
const WAIT_MS = 60_000;
/** A SLUID: `s` and 13 characters of Crockford's base 32. */
const SLUID = /s[0-9A-HJKMNP-TV-Z]{13}/;
/**
 * Burns 2.2 s of CPU time (its own, by times: a loaded machine only takes longer), then sleeps for
 * a length no other process on the host has, so the test finds the job's sleeper by its command line.
 * The test waits for BURNT_S once the sleeper runs: `times` counts in clock ticks, which can run
 * ahead of the cgroup's exact count, and an agent's reading taken during the burn's last moments is
 * still within 0.05 s of the cgroup's final figure.
 */
const BURN = (mark: string): string => `perl -e '1 while (times)[0] + (times)[1] < 2.2'; exec sleep 900.${mark}`;
const BURNT_S = 2.15;

/** One cgroup.conf setting of the job directories' names, and what the agent should make of it. */
interface Naming {
  readonly name: string;
  /** REAL_SLURM_* knobs for up.sh. */
  readonly env: Record<string, string>;
  /** The directory (and /proc/<pid>/cgroup component) slurmstepd makes for `jobId`. */
  readonly jobDir: (jobId: string) => RegExp;
  /** ib_slurm_cgroup_layout_info's layout for the scopes. */
  readonly layout: 'v2' | 'v2-sluid';
}

const NAMINGS: readonly Naming[] = [
  {
    name: 'default (SLUID directories)',
    env: {},
    jobDir: () => SLUID,
    layout: 'v2-sluid',
  },
  {
    name: 'CgroupJobIdPaths=yes (job_<id> directories)',
    env: { REAL_SLURM_CGROUP_JOBID_PATHS: 'yes' },
    jobDir: (jobId) => new RegExp(`job_${jobId}`),
    layout: 'v2',
  },
];

/** Anchors `re` to a whole directory name. */
function whole(re: RegExp): RegExp {
  return new RegExp(`^(?:${re.source})$`);
}

/** Stand-in devices at /dev/infiniband/uverbsN (the chroot's /dev is the host's, bound). */
class StandInDevices {
  readonly base: number;
  private readonly madeDir: boolean;
  private readonly standIns: Record<Hca, StandIn>;

  constructor() {
    this.madeDir = !fs.existsSync(DEV_DIR);
    fs.mkdirSync(DEV_DIR, { recursive: true });
    let base = 70;
    while (HCAS.some((h) => fs.existsSync(this.pathAt(base + UVERBS_OFFSET[h])))) base += 10;
    this.base = base;
    const picked = pickStandIns(HCAS.length);
    this.standIns = Object.fromEntries(HCAS.map((h, i) => [h, picked[i]])) as Record<Hca, StandIn>;
    for (const h of HCAS) mknodStandIn(this.path(h), this.standIns[h]);
  }

  private pathAt(n: number): string {
    return `${DEV_DIR}/uverbs${n}`;
  }

  uverbs(h: Hca): number {
    return this.base + UVERBS_OFFSET[h];
  }

  path(h: Hca): string {
    return this.pathAt(this.uverbs(h));
  }

  dev(h: Hca): string {
    return this.standIns[h].dev;
  }

  remove(): void {
    for (const h of HCAS) fs.rmSync(this.path(h), { force: true });
    if (this.madeDir) fs.rmSync(DEV_DIR, { recursive: true, force: true });
  }
}

/** The stepd scope directories of this cluster's nodes, as the host sees them. */
function scopeDirs(nodes: readonly string[]): string[] {
  return nodes.map((n) => `${UNIFIED}/system.slice/${n}_slurmstepd.scope`);
}

/** Pids of processes whose command line is exactly `argv`. */
function pidsRunning(argv: readonly string[]): number[] {
  const want = `${argv.join('\0')}\0`;
  return fs
    .readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8') === want;
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}

/** A v2 keyed cgroup file's `key` as a number. */
function keyedValue(file: string, key: string): number {
  const text = fs.readFileSync(file, 'utf8');
  const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
  if (!m) throw new Error(`${file} has no ${key}: ${text}`);
  return Number(m[1]);
}

/** The fd link texts of `pid` that refer to the device `dev`. */
function linksTo(pid: number, dev: string): string[] {
  const out: string[] = [];
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    const p = `/proc/${pid}/fd/${fd}`;
    const st = fs.statSync(p, { throwIfNoEntry: false });
    if (st?.isCharacterDevice() && deviceNumber(st.rdev) === dev) out.push(fs.readlinkSync(p));
  }
  return out;
}

describe.skipIf(gate.skip).for(NAMINGS)(
  'node agent on real Slurm 26.05 cgroups (cgroup v2), $name, jobs in a chroot, the real /proc',
  { timeout: 120_000 },
  (naming) => {
    // New for each run (the cluster name too: startRealSlurm's own token): two runs, or another
    // Slurm on this host, never share a name or a cgroup.
    const token = randomBytes(3).toString('hex').replace(/^\d/, 'x');
    const nodePrefix = `c26${token}n`;
    const nodes = [`${nodePrefix}1`, `${nodePrefix}2`];
    const firstJobId = 100_000 + (randomBytes(2).readUInt16BE() % 800) * 1000;
    let slurm: RealSlurm | undefined;
    let releaseStandIns: (() => void) | undefined;
    let devices: StandInDevices | undefined;
    let sysfs: string | undefined;
    let outsider: ChildProcess | undefined;
    let agent: AgentProcess | undefined;
    let chroot = '';
    const job: Record<'batch' | 'steps' | 'sharedA' | 'sharedB', string> = {
      batch: '',
      steps: '',
      sharedA: '',
      sharedB: '',
    };

    async function sbatch(node: string, ...args: string[]): Promise<string> {
      // up.sh puts the first half of the nodes in partition cpu, the rest in gpu.
      const partition = node === nodes[0] ? 'cpu' : 'gpu';
      const { stdout } = await (slurm as RealSlurm).run([
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
      writeCounters(sysfs as string, device, 1, { port_xmit_data: words, port_rcv_data: words * 2 }, 'counters');
    }

    beforeAll(async () => {
      for (const dir of scopeDirs(nodes)) expect(fs.existsSync(dir), `${dir} before the cluster starts`).toBe(false);
      slurm = await startRealSlurm({
        release: '26.05',
        instance: 'cg26',
        cgroup: 'v2',
        nodes: 2,
        nodePrefix,
        firstJobId,
        env: naming.env,
      });
      chroot = slurm.chrootDir as string;
      releaseStandIns = await leaseStandIns();
      devices = new StandInDevices();
      sysfs = fs.mkdtempSync('/tmp/slurm-otel-cg26-sysfs-');
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
            },
          ],
        });
      }
      const d = devices;
      const [n1, n2] = nodes as [string, string];
      // A regular file named like mlx5_4's uverbs device: not that device, it holds nothing.
      const decoy = path.join(slurm.stateDir, 'work', `uverbs${d.uverbs('mlx5_4')}`);
      fs.writeFileSync(decoy, '');
      job.batch = await sbatch(n1, '--wrap', `exec 3<${d.path('mlx5_0')} 4<${decoy}; exec sleep 900`);
      const twoSteps = path.join(slurm.stateDir, 'work', 'two-steps.sh');
      fs.writeFileSync(
        twoSteps,
        [
          '#!/bin/bash',
          ...[0, 1].map(() => `srun -n1 --overlap sh -c '${HOLD}' ${d.path('mlx5_1')} &`),
          'wait',
          '',
        ].join('\n'),
        { mode: 0o755 },
      );
      job.steps = await sbatch(n1, '-n2', twoSteps);
      job.sharedA = await sbatch(n1, '--wrap', `exec 3<${d.path('mlx5_2')}; exec sleep 900`);
      job.sharedB = await sbatch(n2, '--wrap', `exec 3<${d.path('mlx5_2')}; exec sleep 900`);
      outsider = spawn('sh', ['-c', HOLD, d.path('mlx5_3')], { stdio: 'ignore' });
      const want: Record<Hca, number> = { mlx5_0: 1, mlx5_1: 2, mlx5_2: 2, mlx5_3: 1, mlx5_4: 0 };
      await waitFor(
        'every job process to hold its stand-in device',
        () => (HCAS.every((h) => holdersOfDevice(d.dev(h)).length === want[h]) ? true : undefined),
        WAIT_MS,
      );
    }, REAL_SLURM_START_TIMEOUT_MS + 120_000);

    afterAll(async () => {
      if (agent) await stopChild(agent.child);
      if (outsider) await stopChild(outsider);
      await slurm?.stop();
      devices?.remove();
      releaseStandIns?.();
      if (sysfs) fs.rmSync(sysfs, { recursive: true, force: true });
      // down.sh removed the job cgroups slurmstepd left, and unmounted the cgroup2 it mounted.
      for (const dir of scopeDirs(nodes)) expect(fs.existsSync(dir), `${dir} after the cluster stopped`).toBe(false);
    }, 120_000);

    it('jobs sit in directories of the real cgroup v2 tree named as set, and hold their devices by chroot paths', () => {
      const [s1] = scopeDirs(nodes) as [string];
      // The three jobs on the first node, and nothing else but Slurm's own system/ and slurmd/.
      const jobDirs = fs
        .readdirSync(s1, { withFileTypes: true })
        .filter((e) => e.isDirectory() && !['system', 'slurmd'].includes(e.name))
        .map((e) => e.name);
      // Sorted names against sorted ids: job_<id> sorts as its id does, and SLUIDs all match one pattern.
      const want = [job.batch, job.steps, job.sharedA]
        .sort()
        .map((id) => expect.stringMatching(whole(naming.jobDir(id))));
      expect(jobDirs.sort()).toEqual(want);
      const d = devices as StandInDevices;
      const [holder] = holdersOfDevice(d.dev('mlx5_0')) as [number];
      const cg = fs.readFileSync(`/proc/${holder}/cgroup`, 'utf8');
      expect(cg).toMatch(
        new RegExp(
          `^0::/system\\.slice/${nodes[0]}_slurmstepd\\.scope/${naming.jobDir(job.batch).source}/step_batch/`,
          'm',
        ),
      );
      expect(linksTo(holder, d.dev('mlx5_0'))).toEqual([`${chroot}${d.path('mlx5_0')}`]);
    });

    it('exact attribution, device_jobs, job series and one layout per scope', async () => {
      agent = await startNodeAgentProcess([
        '--sysfs-root',
        sysfs as string,
        '--unreadable-processes',
        'ignore-outside-jobs',
      ]);
      const samples = await waitFor(
        'the attribution of every port',
        async () => {
          const s = await scrape(agent!);
          return statusOf(s, 'mlx5_2') === 'shared' && statusOf(s, 'mlx5_0') === 'sole' ? s : undefined;
        },
        WAIT_MS,
      );
      const ports = portTable(samples, HCAS);
      expect(ports.status, agent.stderr()).toEqual({
        mlx5_0: 'sole',
        mlx5_1: 'sole',
        mlx5_2: 'shared',
        mlx5_3: 'nonjob',
        mlx5_4: 'idle',
      });
      expect(ports.jobs).toEqual({ mlx5_0: 1, mlx5_1: 1, mlx5_2: 2, mlx5_3: 0, mlx5_4: 0 });
      expect(jobIdsOn(samples, 'ib_slurm_job_transmit_bytes_total', 'mlx5_0')).toEqual([job.batch]);
      expect(jobIdsOn(samples, 'ib_slurm_job_transmit_bytes_total', 'mlx5_1')).toEqual([job.steps]);
      for (const h of ['mlx5_2', 'mlx5_3', 'mlx5_4'] as const)
        expect(jobIdsOn(samples, 'ib_slurm_job_transmit_bytes_total', h), h).toEqual([]);
      expect(jobIdsOn(samples, 'ib_slurm_job_device_attributed', 'mlx5_2')).toEqual([job.sharedA, job.sharedB].sort());
      const layouts = select(samples, 'ib_slurm_cgroup_layout_info').filter((s) =>
        nodes.some((n) => (s.labels.scope ?? '').endsWith(`/${n}_slurmstepd.scope`)),
      );
      expect(layouts.map((s) => [s.labels.scope, s.labels.layout]).sort()).toEqual(
        nodes.map((n) => [`unified/system.slice/${n}_slurmstepd.scope`, naming.layout]),
      );
      // Two srun steps and the batch step of one job are one job.
      expect(valueOf(samples, 'ib_slurm_job_processes', { job_id: job.steps })).toBeGreaterThanOrEqual(3);
    });

    it('explain names the chrooted holders with the path they hold the device by', async () => {
      const r = await run(process.execPath, [
        BIN,
        'explain',
        '--json',
        '--sysfs-root',
        sysfs as string,
        '--unreadable-processes',
        'ignore-outside-jobs',
      ]);
      expect(r.code, r.stderr).toBe(0);
      const rows = (
        JSON.parse(r.stdout) as {
          ports: { device: string; jobs: { jobId: string; holders: { paths?: string[] }[] }[] }[];
        }
      ).ports;
      const d = devices as StandInDevices;
      const row = rows.find((p) => p.device === 'mlx5_0');
      expect(row?.jobs.map((j) => [j.jobId, j.holders.map((h) => h.paths)])).toEqual([
        [job.batch, [[`${chroot}${d.path('mlx5_0')}`]]],
      ]);
    });

    it('job series count while the job is sole; scancel: its series are gone and the port goes idle', async () => {
      await expectCredited(
        agent!,
        { jobId: job.batch, device: 'mlx5_0' },
        1000,
        () => counters('mlx5_0', 1000 + 250),
        WAIT_MS,
      );
      await (slurm as RealSlurm).run(['scancel', job.batch]);
      const s = await waitForJobGone(agent!, job.batch, 'mlx5_0', WAIT_MS);
      expect(valueOf(s, 'ib_slurm_device_jobs', { device: 'mlx5_0', port: '1' })).toBe(0);
      expect(holdersOfDevice((devices as StandInDevices).dev('mlx5_0'))).toEqual([]);
    });

    it("per-job CPU agrees with the job directory's cpu.stat; memory only where the controller is", async () => {
      const n2 = nodes[1] as string;
      const mark = String(randomBytes(3).readUIntBE(0, 3));
      const burn = await sbatch(n2, '--wrap', BURN(mark));
      // The sleeper starts once the burn is done; its cgroup names the job's directory.
      const [sleeper] = await waitFor(
        'the burning job to finish its burn and sleep',
        () => {
          const pids = pidsRunning(['sleep', `900.${mark}`]);
          return pids.length > 0 ? pids : undefined;
        },
        WAIT_MS,
      );
      const cg = fs.readFileSync(`/proc/${sleeper}/cgroup`, 'utf8');
      const m = new RegExp(
        `^0::/(system\\.slice/${n2}_slurmstepd\\.scope/${naming.jobDir(burn).source})/step_batch/`,
        'm',
      ).exec(cg);
      expect(m, cg).not.toBeNull();
      const dir = `${UNIFIED}/${(m as RegExpExecArray)[1]}`;
      const fileCpu = (): number =>
        (keyedValue(`${dir}/cpu.stat`, 'user_usec') + keyedValue(`${dir}/cpu.stat`, 'system_usec')) / 1e6;
      const name = (n: string): string => `ib_slurm_job_${n}`;
      const cpuIn = (got: readonly Sample[]): number =>
        (valueOf(got, name('cpu_user_seconds_total'), { job_id: burn }) ?? NaN) +
        (valueOf(got, name('cpu_system_seconds_total'), { job_id: burn }) ?? NaN);
      // A scrape serves the last cycle's reading, which may predate the burn's end: wait for the agent to see it.
      const s = await waitFor(
        'the agent to export the burnt CPU time',
        async () => {
          const got = await scrape(agent!);
          return cpuIn(got) >= BURNT_S ? got : undefined;
        },
        WAIT_MS,
      );
      const agentCpu = cpuIn(s);
      const file = fileCpu();
      // The job is asleep after the burn: its cgroup's CPU time barely moves between the two readings.
      expect(Math.abs(agentCpu - file), `agent ${agentCpu} s, cpu.stat ${file} s`).toBeLessThan(0.1);
      // The burn, the shell and slurmstepd: no more than 0.8 s beyond the 2.2 s burnt.
      expect(agentCpu).toBeLessThan(3);
      // Addressed by its job id, whatever the directory is named.
      expect(select(s, name('cpu_user_seconds_total'), { job_id: burn })).toHaveLength(1);

      // A hybrid host's memory controller is bound to v1, so this tree has no memory files: no
      // memory series rather than a wrong one. Where the controller holds the job, the file's figure.
      const used = valueOf(s, name('memory_used_bytes'), { job_id: burn });
      if (fs.existsSync(`${dir}/memory.current`)) {
        const current = Number(fs.readFileSync(`${dir}/memory.current`, 'utf8').trim());
        expect(Math.abs((used ?? NaN) - current), `agent ${used}, memory.current ${current}`).toBeLessThan(8 * 2 ** 20);
      } else {
        expect(fs.readFileSync(`${UNIFIED}/cgroup.controllers`, 'utf8')).not.toMatch(/\bmemory\b/);
        expect(used).toBeUndefined();
        expect(select(s, name('memory_peak_bytes'), { job_id: burn })).toEqual([]);
      }
      await (slurm as RealSlurm).run(['scancel', burn]);
    });
  },
);
