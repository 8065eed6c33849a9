/**
 * The node agent's whole cycle on the real kernel: node-cycle.ts's heavy node made of real
 * processes in real job cgroups, read through the real /proc and cgroup2 hierarchy, so that what
 * procfs and cgroupfs cost (a file the kernel writes on each read, an fd table listed afresh)
 * weighs on the cycle and on its baselines alike. Only sysfs is synthetic (there is no HCA here).
 *
 * The node (bench/heavy-node.ts): 64 jobs of v2 layout under a slice made for the run in this
 * host's cgroup2 hierarchy (`<slice>/bench_slurmstepd.scope/job_<id>/step_0/{slurm,user/task_<i>}`,
 * removed at the end); 600 job processes (`sleep`s) × 256 fds, 5 of them on their job's HCA and
 * the rest on a socket, one in each task directory; a stepd in each step's `slurm`; 200 other
 * processes × 16 fds outside the jobs (in the slice's `others`); beside whatever the machine
 * runs. Each HCA's uverbs device is a stand-in: a real character device no process holds
 * (test/support/stand-in-devices.ts), made with mknod and named in the synthetic sysfs, so the
 * agent finds the holders by stat as on a node; as many HCAs as there are free stand-ins, up to
 * the heavy node's 8. A run stopped by ^C or SIGTERM cleans up once its measurement ends; the
 * slice of one killed outright is removed by the next run.
 *
 * Prints, against baselines measured in the same run and alternated with it:
 *   cold cycle   (median of fresh collectors) vs `find /proc/[0-9]*\/fd -lname '*uverbs*'`
 *   steady cycle (median of a warm collector)  vs listing every /proc/<pid>/fd
 * This host's cgroup2 hierarchy may have no controllers to give (a hybrid v1/v2 host has none):
 * then each job directory has cpu.stat but no memory files, and the cycle reads less of them
 * than on a node; the bench says which.
 *
 * `--fd-reader fs`: the cycles read fd tables through Node's fs (node-cycle.ts says more).
 * Needs root (cgroup directories, moving processes, mknod).
 *   npm run build && node dist/bench/node-cycle-real.js
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeHca, type JobSpec } from '../src/demo/nodetree.js';
import { HOLD_COUNTER_FILES, NodeCollector } from '../src/node/collect.js';
import { parsePids } from '../src/node/read/cgroups.js';
import type { Roots } from '../src/node/read/roots.js';
import { heldDevices, leaseStandIns, mknodStandIn, standInPool } from '../test/support/stand-in-devices.js';
import { alive } from '../test/support/stopping.js';
import { waitFor } from '../test/support/tools.js';
import { HEAVY_NODE, heavyTree } from './heavy-node.js';
import { socketFd, startSleepers, stopSleepers } from './sleepers.js';
import { alternated, asNodeAgent, benchFdReader, listingFloor, ratioText, sayRuntime, time } from './stats.js';

const COLD_RUNS = 7;
const STEADY_RUNS = 30;
/** Fds of a job process on its HCA (the rest are on a socket): the heavy node's 2 % of paths. */
const DEVICE_FDS = 5;
const OTHER_FDS = 16;
const STEPD_FDS = 16;

/** Where this host mounts its cgroup2 hierarchy (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host). */
function cgroup2Mount(): string {
  for (const line of fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [mount, fsType] = [line.split(' ')[4], line.split(' - ')[1]?.split(' ')[0]];
    if (fsType === 'cgroup2' && mount !== undefined && mount.startsWith('/sys/fs/cgroup')) return mount;
  }
  throw new Error('no cgroup2 hierarchy mounted under /sys/fs/cgroup');
}

/** A job's real cgroup directories: its tasks' leaves and its stepd's. */
interface JobDirs {
  readonly tasks: readonly string[];
  readonly stepd: string;
}

/** Makes the scope and each job's directories as slurmstepd does (v2, job_<id> names). */
function makeJobCgroups(scope: string, jobs: readonly JobSpec[]): JobDirs[] {
  fs.mkdirSync(path.join(scope, 'system'), { recursive: true });
  return jobs.map((job) => {
    const step = path.join(scope, `job_${job.jobId}`, 'step_0');
    const stepd = path.join(step, 'slurm');
    fs.mkdirSync(stepd, { recursive: true });
    const tasks = (job.steps[0]?.tasks ?? []).map((_, i) => path.join(step, 'user', `task_${i}`));
    for (const t of tasks) fs.mkdirSync(t, { recursive: true });
    return { tasks, stepd };
  });
}

/**
 * Removes what an earlier run killed before its end left behind (its slice, named by its PID, and
 * the sleepers in it): left, they are 64 jobs of processes that a node agent on this host would
 * read as Slurm's.
 */
async function removeStaleRuns(mount: string): Promise<void> {
  for (const name of fs.readdirSync(mount)) {
    const pid = /^slurm-otel-bench-(\d+)\.slice$/.exec(name)?.[1];
    if (pid === undefined || alive(Number(pid))) continue;
    const slice = path.join(mount, name);
    console.log(`removing ${slice}, left by an earlier run that was killed`);
    // cgroup.kill (Linux 5.14) kills every process in the tree; older kernels, each one listed.
    const killAll = path.join(slice, 'cgroup.kill');
    if (fs.existsSync(killAll)) fs.writeFileSync(killAll, '1');
    else for (const p of pidsUnder(slice)) process.kill(p, 'SIGKILL');
    // A cgroup goes only once its killed processes have left it.
    await waitFor(`the processes of ${slice} to exit`, () => pidsUnder(slice).length === 0, 10_000);
    removeCgroups(slice);
  }
}

function pidsUnder(dir: string): number[] {
  const own = parsePids(fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8'));
  const subs = fs.readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory());
  return [...own, ...subs.flatMap((d) => pidsUnder(path.join(dir, d.name)))];
}

/** Removes a cgroup tree, deepest first (a cgroup goes only once it has no children nor processes). */
function removeCgroups(dir: string): void {
  if (!fs.existsSync(dir)) return;
  for (const d of fs.readdirSync(dir, { withFileTypes: true }))
    if (d.isDirectory()) removeCgroups(path.join(dir, d.name));
  fs.rmdirSync(dir);
}

function moveInto(dir: string, child: ChildProcess): void {
  fs.writeFileSync(path.join(dir, 'cgroup.procs'), `${child.pid}\n`);
}

/** The real processes, put into `all` as they start: job tasks and stepds in their cgroups, the others outside. */
async function startNode(
  dirs: readonly JobDirs[],
  othersDir: string,
  devices: readonly string[],
  all: ChildProcess[],
): Promise<void> {
  const sock = await socketFd();
  const held = devices.map((d) => fs.openSync(d, 'r'));
  try {
    const withDevice = (dev: number): number[] =>
      Array.from({ length: HEAVY_NODE.fdsPerProcess }, (_, i) => (i < DEVICE_FDS ? dev : sock.fd));
    const plain = (n: number): number[] => Array.from({ length: n }, () => sock.fd);
    for (const [j, job] of dirs.entries()) {
      const device = held[j % held.length] as number;
      const tasks = await startSleepers(job.tasks.length, () => withDevice(device), all);
      tasks.forEach((t, i) => moveInto(job.tasks[i] as string, t));
      for (const stepd of await startSleepers(1, () => plain(STEPD_FDS), all)) moveInto(job.stepd, stepd);
    }
    for (const other of await startSleepers(HEAVY_NODE.otherProcesses, () => plain(OTHER_FDS), all))
      moveInto(othersDir, other);
  } finally {
    for (const fd of held) fs.closeSync(fd);
    sock.close();
  }
}

function processCount(): number {
  return fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length;
}

async function main(): Promise<void> {
  asNodeAgent();
  sayRuntime();
  if (process.getuid?.() !== 0) throw new Error('needs root: it makes cgroup directories and device nodes');
  // Killed at once by a signal, the run would leave its processes and cgroups behind: the first ^C
  // or SIGTERM lets the measurement end and the run clean up; a second stops it where it is.
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, () => console.error(`${sig}: cleaning up once the measurement in hand ends`));
  await removeStaleRuns(cgroup2Mount());
  const release = await leaseStandIns();
  const work = fs.mkdtempSync(path.join(fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'slurm-otel-real-'));
  const slice = path.join(cgroup2Mount(), `slurm-otel-bench-${process.pid}.slice`);
  const scope = path.join(slice, 'bench_slurmstepd.scope');
  const children: ChildProcess[] = [];
  try {
    const held = heldDevices();
    const standIns = standInPool()
      .filter((s) => !held.has(s.dev))
      .slice(0, HEAVY_NODE.hcas);
    if (standIns.length === 0) throw new Error('no free stand-in device here (test/support/stand-in-devices.ts)');
    const sysfs = path.join(work, 'sys');
    const nodes = standIns.map((s, i) => {
      const file = path.join(work, `uverbs${i}`);
      mknodStandIn(file, s);
      return file;
    });
    const hcas = heavyTree(HEAVY_NODE)
      .hcas.slice(0, standIns.length)
      .map((h, i) => ({ ...h, uverbs: i, dev: standIns[i]?.dev }));
    for (const hca of hcas) writeHca(sysfs, hca);
    const jobs = heavyTree({ ...HEAVY_NODE, hcas: hcas.length }).jobs;
    const dirs = makeJobCgroups(scope, jobs);
    // The other processes in the slice too, outside the jobs' scope: all of the run's processes in
    // one tree, which removeStaleRuns can kill whole.
    const othersDir = path.join(slice, 'others');
    fs.mkdirSync(othersDir);
    await startNode(dirs, othersDir, nodes, children);
    const controllers = fs.readFileSync(path.join(slice, 'cgroup.controllers'), 'utf8').trim();
    console.log(
      `real node: ${hcas.length} HCAs (stand-in devices) × ${HEAVY_NODE.portsPerHca} ports, ${jobs.length} jobs, ` +
        `${HEAVY_NODE.jobProcesses} job processes × ${HEAVY_NODE.fdsPerProcess} fds, ${HEAVY_NODE.otherProcesses} others ` +
        `(${processCount()} processes in /proc); job cgroups under ${slice}, controllers: ${controllers || 'none'}`,
    );
    measure({ sysfs, procfs: '/proc', cgroupfs: slice });
  } finally {
    await stopSleepers(children);
    removeCgroups(slice);
    fs.rmSync(work, { recursive: true, force: true });
    release();
  }
}

function measure(roots: Roots): void {
  const fdReader = benchFdReader();
  const collector = (): NodeCollector =>
    new NodeCollector({
      roots,
      fdRescanIntervalMs: 3_600_000,
      jobUsage: true,
      holdCounterFiles: HOLD_COUNTER_FILES,
      fdReader,
    });
  const find = (): number =>
    time(() => execFileSync('sh', ['-c', "find /proc/[0-9]*/fd -lname '*uverbs*' 2>/dev/null | wc -l"]));
  const coldCycle = (): number => {
    const c = collector();
    const ms = time(() => c.cycle(0));
    c.close();
    return ms;
  };
  const [fnd, cold, coldRounds] = alternated(COLD_RUNS, find, coldCycle);
  const warm = collector();
  const first = warm.cycle(0);
  const [floor, steady, steadyRounds] = alternated(
    STEADY_RUNS,
    () => time(() => listingFloor('/proc')),
    (i) => time(() => warm.cycle(1000 * (i + 1))),
  );
  warm.close();
  const sn = first.snapshot;
  const s = sn.stats;
  const jobHolders = [...sn.holders.values()].reduce((n, h) => n + h.jobPids.length, 0);
  console.log(
    `processes seen: ${s.processes}, fd links read cold: ${s.fdLinksRead}, fds stat'ed: ${s.fdsStated}, points: ${first.families.reduce((n, f) => n + f.points.length, 0)} (job processes found holding an HCA: ${jobHolders}, allocations: ${sn.allocations.length}, problems: ${sn.problems.length})`,
  );
  for (const p of sn.problems) console.log(`  problem: ${JSON.stringify(p)}`);
  console.log(
    `cold cycle:   ${cold.toFixed(1)} ms   find -lname: ${fnd.toFixed(1)} ms   ${ratioText(cold, fnd, coldRounds)}  (goal ≤ 1.00×)`,
  );
  console.log(
    `steady cycle: ${steady.toFixed(1)} ms   fd listing floor: ${floor.toFixed(1)} ms   ${ratioText(steady, floor, steadyRounds)}  (goal ≤ 1.30×)`,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
