import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeCollector } from '../../../src/node/collect.js';
import type { Cycle } from '../../../src/node/join/cycle.js';
import { scanCgroups } from '../../../src/node/read/cgroups.js';
import {
  parseCpuCount,
  parseKeyed,
  parseV1Limit,
  parseV2Limit,
  readJobUsage,
} from '../../../src/node/read/job-usage.js';
import { Problems } from '../../../src/node/read/problems.js';
import { NODE_METRICS as M } from '../../../src/node/metrics.js';
import type { MetricSpec, Point } from '../../../src/telemetry/spec.js';
import { demoTree } from '../../../src/demo/scenarios.js';
import { writeTree, type TreeLayout, type TreeRoots } from '../../../src/demo/nodetree.js';
import { tmpDir } from '../../support/tmp.js';

const V1_UNLIMITED = '9223372036854771712';

function points(c: Cycle, spec: MetricSpec): Point[] {
  return (c.families.find((f) => f.spec.name === spec.name)?.points ?? []) as Point[];
}

function valueOf(c: Cycle, spec: MetricSpec, jobId: string): number | bigint | undefined {
  return points(c, spec).find((p) => p.attributes.job_id === jobId)?.value;
}

function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
}

/** The demo tree in `layout`, and each job's own cgroup directories as the scan finds them. */
function tree(layout: TreeLayout): { roots: TreeRoots; dirs: Map<string, { controllers: string; dir: string }[]> } {
  const roots = writeTree(tmpDir(), demoTree({ layout, nonJobHolder: false }));
  if (layout === 'v1')
    for (const j of demoTree({ layout, nonJobHolder: false }).jobs)
      fs.mkdirSync(path.join(roots.cgroupfs, 'cpuacct', 'slurm', `uid_${j.uid}`, `job_${j.jobId}`), {
        recursive: true,
      });
  const scan = scanCgroups(roots.cgroupfs, new Problems());
  return { roots, dirs: new Map(scan.allocations.map((a) => [a.id, [...(a.jobDirs ?? [])]])) };
}

const V2_FILES = {
  'cpu.stat':
    'usage_usec 3500000\nuser_usec 2500000\nsystem_usec 1000000\nnr_periods 40\nnr_throttled 7\nthrottled_usec 250000\n',
  'memory.current': '104857600\n',
  'memory.peak': '209715200\n',
  'memory.max': '268435456\n',
  'memory.events': 'low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n',
};

describe('job usage parsers', () => {
  it('reads keyed lines and ignores the rest', () => {
    expect(parseKeyed('user 5\nsystem 7\nnot a line\n\n')).toEqual(
      new Map([
        ['user', 5n],
        ['system', 7n],
      ]),
    );
  });

  it('tells no limit from a limit, v2 and v1', () => {
    expect(parseV2Limit('max\n')).toEqual({ ok: true, value: undefined });
    expect(parseV2Limit('1048576\n')).toEqual({ ok: true, value: 1048576n });
    expect(parseV1Limit(`${V1_UNLIMITED}\n`)).toEqual({ ok: true, value: undefined });
    expect(parseV1Limit('1048576\n')).toEqual({ ok: true, value: 1048576n });
    expect(parseV2Limit('lots\n').ok).toBe(false);
  });

  it('counts the CPUs of a kernel CPU list, and refuses what is not one', () => {
    expect(parseCpuCount('0-3,8,10-11\n')).toEqual({ ok: true, value: 7 });
    expect(parseCpuCount('5\n')).toEqual({ ok: true, value: 1 });
    expect(parseCpuCount('\n')).toEqual({ ok: true, value: 0 });
    for (const bad of ['3-1', '0-', 'a', '0,,1', '0-99999999']) expect(parseCpuCount(bad).ok, bad).toBe(false);
  });
});

describe('readJobUsage on job cgroup trees', () => {
  for (const layout of ['v2', 'v2-sluid'] as const) {
    it(`${layout}: every value from the job directory, through the collector`, () => {
      const { roots, dirs } = tree(layout);
      const jobs = demoTree({ layout, nonJobHolder: false }).jobs;
      const first = jobs[0]!;
      const dir = dirs.get(layout === 'v2' ? first.jobId : (first.sluid as string))![0]!;
      expect(dir.controllers).toBe('');
      writeFiles(dir.dir, V2_FILES);
      const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1_000);
      expect(valueOf(c, M.jobCpuUser, first.jobId)).toBe(2.5);
      expect(valueOf(c, M.jobCpuSystem, first.jobId)).toBe(1);
      expect(valueOf(c, M.jobCpuThrottledPeriods, first.jobId)).toBe(7);
      expect(valueOf(c, M.jobCpuThrottled, first.jobId)).toBe(0.25);
      expect(valueOf(c, M.jobMemory, first.jobId)).toBe(100 * 2 ** 20);
      expect(valueOf(c, M.jobMemoryPeak, first.jobId)).toBe(200 * 2 ** 20);
      expect(valueOf(c, M.jobMemoryLimit, first.jobId)).toBe(256 * 2 ** 20);
      expect(valueOf(c, M.jobOomKills, first.jobId)).toBe(1);
      expect(points(c, M.jobCpuUser)[0]?.startTimeMs).toBe(1_000);
      // The other jobs' directories hold none of these files: no values, and nothing counted as an error.
      expect(points(c, M.jobCpuUser).map((p) => p.attributes.job_id)).toEqual([first.jobId]);
      expect(c.snapshot.problems).toEqual([]);
    });
  }

  it('v1: CPU from the cpuacct hierarchy in ns, memory from the memory hierarchy, no limit when unlimited', () => {
    const { roots, dirs } = tree('v1');
    const first = demoTree({ layout: 'v1', nonJobHolder: false }).jobs[0]!;
    const byCtrl = new Map(dirs.get(first.jobId)!.map((d) => [d.controllers, d.dir]));
    expect([...byCtrl.keys()].sort()).toEqual(['cpuacct', 'cpuset', 'freezer', 'memory']);
    writeFiles(byCtrl.get('cpuacct')!, {
      'cpuacct.usage_user': '2000000000\n',
      'cpuacct.usage_sys': '500000000\n',
      // Never read while the ns files are there: a different figure shows which was taken.
      'cpuacct.stat': 'user 999\nsystem 999\n',
    });
    writeFiles(byCtrl.get('memory')!, {
      'memory.usage_in_bytes': '52428800\n',
      'memory.max_usage_in_bytes': '73400320\n',
      'memory.limit_in_bytes': `${V1_UNLIMITED}\n`,
      'memory.oom_control': 'oom_kill_disable 0\nunder_oom 0\noom_kill 2\n',
    });
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1_000);
    expect(valueOf(c, M.jobCpuUser, first.jobId)).toBe(2);
    expect(valueOf(c, M.jobCpuSystem, first.jobId)).toBe(0.5);
    expect(valueOf(c, M.jobMemory, first.jobId)).toBe(50 * 2 ** 20);
    expect(valueOf(c, M.jobMemoryPeak, first.jobId)).toBe(70 * 2 ** 20);
    expect(valueOf(c, M.jobMemoryLimit, first.jobId)).toBeUndefined();
    expect(valueOf(c, M.jobOomKills, first.jobId)).toBe(2);
    // No job cgroup under the cpu controller (Slurm puts none there): no throttling series.
    expect(points(c, M.jobCpuThrottledPeriods)).toEqual([]);
  });

  it('v1: CPUs allocated from the job cpuset (ConstrainCores=yes)', () => {
    const { roots, dirs } = tree('v1');
    const [first, second] = demoTree({ layout: 'v1', nonJobHolder: false }).jobs;
    const cpuset = (jobId: string): string => dirs.get(jobId)!.find((d) => d.controllers === 'cpuset')!.dir;
    writeFiles(cpuset(first!.jobId), { 'cpuset.cpus': '0-3,8\n' });
    // A cpuset left empty (the job being set up) is no allocation, not zero CPUs.
    writeFiles(cpuset(second!.jobId), { 'cpuset.cpus': '\n' });
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1_000);
    expect(points(c, M.jobCpusAllocated).map((p) => [p.attributes.job_id, p.value])).toEqual([[first!.jobId, 5]]);
    expect(c.snapshot.problems).toEqual([]);
  });

  it("v2: CPUs allocated from the job's own cpuset, never the one it inherits", () => {
    const own = tmpDir();
    writeFiles(own, { 'cpuset.cpus': '2-5\n', 'cpuset.cpus.effective': '2-5\n' });
    expect(readJobUsage([{ controllers: '', dir: own }], new Problems())).toEqual({ cpusAllocated: 4 });
    // Slurm set nothing (ConstrainCores=no): the effective set is the whole node's, inherited.
    const inherited = tmpDir();
    writeFiles(inherited, { 'cpuset.cpus': '\n', 'cpuset.cpus.effective': '0-63\n' });
    expect(readJobUsage([{ controllers: '', dir: inherited }], new Problems())).toEqual({});
    // The cpuset controller not enabled for the job: no files, no value, no error.
    const problems = new Problems();
    expect(readJobUsage([{ controllers: '', dir: tmpDir() }], problems)).toEqual({});
    expect(problems.list()).toEqual([]);
  });

  it('v1: OOM kills of a step whose cgroup was removed stay counted while the job lives', () => {
    const { roots, dirs } = tree('v1');
    const first = demoTree({ layout: 'v1', nonJobHolder: false }).jobs[0]!;
    const mem = dirs.get(first.jobId)!.find((d) => d.controllers === 'memory')!.dir;
    const oom = (dir: string, kills: number): void => {
      fs.mkdirSync(dir, { recursive: true });
      writeFiles(dir, { 'memory.oom_control': `oom_kill_disable 0\nunder_oom 0\noom_kill ${kills}\n` });
    };
    const collector = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 });
    const kills = (at: number): [unknown, number | undefined] => {
      const c = collector.cycle(at);
      const p = points(c, M.jobOomKills).find((q) => q.attributes.job_id === first.jobId);
      return [p?.value, p?.startTimeMs];
    };
    oom(mem, 0);
    oom(path.join(mem, 'step_0'), 1);
    oom(path.join(mem, 'step_0', 'task_0'), 1);
    oom(path.join(mem, 'step_1'), 0);
    expect(kills(1_000)).toEqual([2, 1_000]);
    // step_0 ended and Slurm removed its cgroups: its two kills stay, and the counter did not restart.
    fs.rmSync(path.join(mem, 'step_0'), { recursive: true });
    expect(kills(2_000)).toEqual([2, 1_000]);
    oom(path.join(mem, 'step_1'), 1);
    expect(kills(3_000)).toEqual([3, 1_000]);
    // A step cgroup made anew under the same name counts from 0 again: the old count stays too.
    oom(path.join(mem, 'step_1'), 0);
    expect(kills(4_000)).toEqual([3, 1_000]);
    // The job ends: its series leave, and a later job under the same id starts from its own count.
    fs.rmSync(path.dirname(mem), { recursive: true });
    expect(kills(5_000)).toEqual([undefined, undefined]);
  });

  it('v1: cpuacct.stat in USER_HZ ticks where the kernel lacks the ns files', () => {
    const { roots, dirs } = tree('v1');
    const first = demoTree({ layout: 'v1', nonJobHolder: false }).jobs[0]!;
    writeFiles(dirs.get(first.jobId)!.find((d) => d.controllers === 'cpuacct')!.dir, {
      'cpuacct.stat': 'user 250\nsystem 30\n',
    });
    // Scanned again, as the next cycle would: the walk's listing of each job directory now names the file.
    const all = scanCgroups(roots.cgroupfs, new Problems()).allocations.find((a) => a.id === first.jobId)!.jobDirs!;
    expect(readJobUsage(all, new Problems())).toEqual({ cpuUserSeconds: 2.5, cpuSystemSeconds: 0.3 });
  });

  it("asks only for the files the walk's listing of the job directory showed, and a file it lacks is no vanished job", () => {
    const dir = tmpDir();
    writeFiles(dir, V2_FILES);
    const files = ['cgroup.procs', 'cpu.stat', 'memory.current', 'memory.max', 'memory.events'];
    const problems = new Problems();
    // memory.peak is on disk but not in the listing (a kernel before 5.19 has none): not read.
    expect(readJobUsage([{ controllers: '', dir, files }], problems)).toEqual({
      cpuUserSeconds: 2.5,
      cpuSystemSeconds: 1,
      throttledPeriods: 7,
      throttledSeconds: 0.25,
      memoryBytes: 104857600,
      memoryLimitBytes: 268435456,
      oomKills: 1,
    });
    expect(problems.list()).toEqual([]);
    // Without a listing every file is asked for.
    expect(readJobUsage([{ controllers: '', dir }], new Problems())).toMatchObject({ memoryPeakBytes: 209715200 });
    // A listed file gone since, with its directory: the job ended between the walk and the read.
    fs.rmSync(dir, { recursive: true });
    expect(readJobUsage([{ controllers: '', dir, files }], new Problems())).toBeUndefined();
  });

  it('a job directory that vanished is no usage and no error; a missing file only a missing value', () => {
    const problems = new Problems();
    expect(readJobUsage([{ controllers: '', dir: path.join(tmpDir(), 'gone') }], problems)).toBeUndefined();
    const dir = tmpDir();
    writeFiles(dir, { 'cpu.stat': 'usage_usec 10\nuser_usec 6\nsystem_usec 4\n' });
    expect(readJobUsage([{ controllers: '', dir }], problems)).toEqual({
      cpuUserSeconds: 6e-6,
      cpuSystemSeconds: 4e-6,
    });
    expect(problems.list()).toEqual([]);
  });

  it('a malformed file is counted and leaves only its own value out', () => {
    const problems = new Problems();
    const dir = tmpDir();
    writeFiles(dir, { ...V2_FILES, 'memory.current': 'a lot\n' });
    const u = readJobUsage([{ controllers: '', dir }], problems);
    expect(u?.memoryBytes).toBeUndefined();
    expect(u?.memoryPeakBytes).toBe(200 * 2 ** 20);
    expect(problems.list().map((p) => [p.source, p.kind])).toEqual([['cgroup', 'malformed']]);
  });

  it('counters keep their start while they grow and start anew when they go down (the cgroup made again)', () => {
    const { roots, dirs } = tree('v2');
    const first = demoTree({ layout: 'v2', nonJobHolder: false }).jobs[0]!;
    const dir = dirs.get(first.jobId)![0]!.dir;
    const cpu = (user: number): void => writeFiles(dir, { 'cpu.stat': `user_usec ${user}\nsystem_usec 0\n` });
    const collector = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 });
    const startOf = (c: Cycle): number | undefined => points(c, M.jobCpuUser)[0]?.startTimeMs;
    cpu(5_000_000);
    expect(startOf(collector.cycle(1_000))).toBe(1_000);
    cpu(6_000_000);
    expect(startOf(collector.cycle(2_000))).toBe(1_000);
    cpu(1_000_000);
    const reset = collector.cycle(3_000);
    expect(startOf(reset)).toBe(3_000);
    expect(valueOf(reset, M.jobCpuUser, first.jobId)).toBe(1);
    cpu(2_000_000);
    expect(startOf(collector.cycle(4_000))).toBe(3_000);
    // The job ends: its series leave with it.
    fs.rmSync(path.join(dir, 'cpu.stat'));
    fs.rmSync(dir, { recursive: true });
    expect(points(collector.cycle(5_000), M.jobCpuUser)).toEqual([]);
  });

  it('--job-usage off reads nothing and exports no usage family', () => {
    const { roots, dirs } = tree('v2');
    const first = demoTree({ layout: 'v2', nonJobHolder: false }).jobs[0]!;
    writeFiles(dirs.get(first.jobId)![0]!.dir, V2_FILES);
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000, jobUsage: false }).cycle(1_000);
    expect(c.snapshot.usage).toBeUndefined();
    expect(c.families.filter((f) => f.spec.name.includes('_memory_') || f.spec.name.includes('_cpu_'))).toEqual([]);
  });

  it('a job id in two job cgroups on the node (two slurmd on one host) has no usage', () => {
    const { roots, dirs } = tree('v2');
    const first = demoTree({ layout: 'v2', nonJobHolder: false }).jobs[0]!;
    const dir = dirs.get(first.jobId)![0]!.dir;
    writeFiles(dir, V2_FILES);
    const other = path.join(path.dirname(path.dirname(dir)), 'node2_slurmstepd.scope', path.basename(dir));
    fs.mkdirSync(other, { recursive: true });
    writeFiles(other, { ...V2_FILES, 'cgroup.procs': '' });
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1_000);
    expect(c.snapshot.allocations.filter((a) => a.jobId === first.jobId)).toHaveLength(2);
    expect(points(c, M.jobCpuUser)).toEqual([]);
  });
});
