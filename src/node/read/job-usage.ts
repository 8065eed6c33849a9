/**
 * A job's own use of CPU and memory, from the job cgroup directories the scan found (cgroups.ts):
 * one read of each file per job per cycle. Parsing is apart from reading, so the parsers are
 * tested on text alone.
 *
 * What is read, and why:
 * - CPU time. v2: `cpu.stat` user_usec and system_usec (present without the cpu controller).
 *   v1: `cpuacct.usage_user` and `cpuacct.usage_sys`, in nanoseconds, which need no clock-tick
 *   rate; `cpuacct.stat` (in USER_HZ ticks, 100 a second on Linux) only where the kernel lacks
 *   them (before 4.7). Both v1 files split user and system by the kernel's tick sampling, so the
 *   split is as fine as the tick; their sum follows the precise total.
 * - Throttling. `cpu.stat` nr_throttled, and throttled_usec (v2) or throttled_time in ns (v1):
 *   present only where the cpu controller holds the job (v1 Slurm never puts jobs there).
 * - Memory in use. v2 `memory.current`, v1 `memory.usage_in_bytes`: what is charged to the job
 *   and counted against its limit, page cache included (both kernels charge a job for the file
 *   pages it read or wrote). This is not Slurm's RSS: a job that reads large files shows more.
 * - Peak. v2 `memory.peak` (kernels from 5.19), v1 `memory.max_usage_in_bytes`, on the same basis.
 * - Limit. v2 `memory.max` ("max": none), v1 `memory.limit_in_bytes` (the kernel's huge
 *   unlimited value, anything from 2^62: none).
 * - OOM kills. v2 `memory.events` oom_kill at the job level (it sums its subtree); v1
 *   `memory.oom_control` oom_kill (kernels from 4.13) of the job and each step and task below it,
 *   summed, since v1 counts a kill only where the limit was hit. v1 also gives each cgroup's own
 *   count, so the join can keep the kills of a step whose cgroup was removed (job-usage.ts there).
 * - CPUs allocated on this node: the job's cpuset, which Slurm sets to the cores it gave the job
 *   here with ConstrainCores=yes. `cpuset.cpus` of the job directory: v1 in the cpuset hierarchy
 *   (there only when Slurm constrains cores); v2 the job's own, empty when Slurm constrained
 *   nothing. Not v2's `cpuset.cpus.effective`: without a cpuset of its own the job inherits the
 *   whole node's, which is no allocation (and one file a job keeps the cycle's reads to one).
 *
 * A file the kernel does not have (an older kernel, a controller not holding the job) leaves
 * that value absent. A job directory that vanished meanwhile (the job ended) is no error: the
 * job has no usage this cycle.
 */
import fs from 'node:fs';
import type { JobDir } from './cgroups.js';
import type { Problems } from './problems.js';
import { entryPath, listSubdirs, parseCounter, readSmall } from './roots.js';
import { failed, ok, type Read } from './result.js';

export interface JobUsage {
  readonly cpuUserSeconds?: number;
  readonly cpuSystemSeconds?: number;
  readonly throttledPeriods?: number;
  readonly throttledSeconds?: number;
  readonly memoryBytes?: number;
  readonly memoryPeakBytes?: number;
  /** Absent when the job has no limit (or none could be read). */
  readonly memoryLimitBytes?: number;
  readonly oomKills?: number;
  /**
   * v1: each memory cgroup's own OOM kill count, by its path under the job directory ('' for the
   * job itself); oomKills is their sum.
   */
  readonly oomKillsByCgroup?: Readonly<Record<string, number>>;
  /** CPUs in the job's cpuset on this node; absent when Slurm does not constrain the job's cores. */
  readonly cpusAllocated?: number;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** v1's memory.limit_in_bytes when nothing is set is about 2^63; no real limit comes near 2^62. */
const V1_UNLIMITED = 1n << 62n;
/** USER_HZ: the unit of v1 cpuacct.stat, 100 on every Linux architecture this runs on. */
const USER_HZ = 100;

/** Lines of `key value` (cpu.stat, memory.events, memory.oom_control, cpuacct.stat); other lines ignored. */
export function parseKeyed(text: string): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+) (\d{1,20})$/.exec(line.trim());
    if (m) out.set(m[1] as string, BigInt(m[2] as string));
  }
  return out;
}

/** More CPUs than any node has: a list naming more is malformed, not counted. */
const MAX_CPUS = 1 << 16;

/** A kernel CPU list (`0-3,8,10-11`; empty: none) as the number of CPUs it names. */
export function parseCpuCount(text: string): Read<number> {
  const t = text.trim();
  if (t === '') return ok(0);
  let count = 0;
  for (const part of t.split(',')) {
    const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(part);
    const lo = Number(m?.[1]);
    const hi = m?.[2] === undefined ? lo : Number(m[2]);
    if (!m || hi < lo) return failed('malformed', JSON.stringify(t.slice(0, 40)));
    count += hi - lo + 1;
    if (count > MAX_CPUS) return failed('malformed', `more than ${MAX_CPUS} CPUs`);
  }
  return ok(count);
}

/** v2 memory.max: "max" is no limit (undefined). */
export function parseV2Limit(text: string): Read<bigint | undefined> {
  return text.trim() === 'max' ? ok(undefined) : parseCounter(text);
}

/** v1 memory.limit_in_bytes: the huge unlimited value is no limit (undefined). */
export function parseV1Limit(text: string): Read<bigint | undefined> {
  const r = parseCounter(text);
  return r.ok && r.value >= V1_UNLIMITED ? ok(undefined) : r;
}

/** Reads files of one job, noting failures; `gone` tells whether any file was missing. */
class JobFiles {
  gone = false;
  /** Each job directory's files as the cgroup walk listed them (JobDir.files). */
  private readonly listed: ReadonlyMap<string, readonly string[]>;

  constructor(
    private readonly problems: Problems,
    dirs: readonly JobDir[],
  ) {
    this.listed = new Map(dirs.flatMap((d) => (d.files === undefined ? [] : [[d.dir, d.files] as const])));
  }

  /**
   * The file's text, or undefined (missing: `gone` set; other failures counted). A file its
   * directory's listing lacks is one this kernel does not have: not asked for, and not `gone`.
   */
  text(dir: string, name: string): string | undefined {
    if (this.listed.get(dir)?.includes(name) === false) return undefined;
    const r = readSmall(entryPath(dir, name), { whole: true });
    if (r.ok) return r.value;
    this.note(r);
    return undefined;
  }

  /** The file parsed, or undefined when it could not be read or parsed (a malformed file is counted). */
  parsed<T>(dir: string, name: string, parse: (text: string) => Read<T>): T | undefined {
    const text = this.text(dir, name);
    if (text === undefined) return undefined;
    const r = parse(text);
    if (r.ok) return r.value;
    this.problems.add('cgroup', r.kind, `${entryPath(dir, name)}: ${r.detail}`);
    return undefined;
  }

  private note(r: Read<unknown>): void {
    if (r.ok) return;
    if (r.kind === 'gone') this.gone = true;
    else this.problems.add('cgroup', r.kind, r.detail);
  }
}

const num = (v: bigint | undefined, scale = 1): number | undefined => (v === undefined ? undefined : Number(v) / scale);

function readV2(dir: string, files: JobFiles): JobUsage {
  const u: Mutable<JobUsage> = {};
  const cpu = parseKeyed(files.text(dir, 'cpu.stat') ?? '');
  u.cpuUserSeconds = num(cpu.get('user_usec'), 1e6);
  u.cpuSystemSeconds = num(cpu.get('system_usec'), 1e6);
  u.throttledPeriods = num(cpu.get('nr_throttled'));
  u.throttledSeconds = num(cpu.get('throttled_usec'), 1e6);
  u.memoryBytes = num(files.parsed(dir, 'memory.current', parseCounter));
  u.memoryPeakBytes = num(files.parsed(dir, 'memory.peak', parseCounter));
  u.memoryLimitBytes = num(files.parsed(dir, 'memory.max', parseV2Limit));
  u.oomKills = num(parseKeyed(files.text(dir, 'memory.events') ?? '').get('oom_kill'));
  u.cpusAllocated = v2Cpus(dir, files);
  return u;
}

/** v2: the job's own cpuset, as Slurm wrote it; empty when only inherited (no allocation). */
function v2Cpus(dir: string, files: JobFiles): number | undefined {
  return files.parsed(dir, 'cpuset.cpus', parseCpuCount) || undefined;
}

function readV1Cpuacct(dir: string, files: JobFiles, u: Mutable<JobUsage>): void {
  const user = files.parsed(dir, 'cpuacct.usage_user', parseCounter);
  const sys = files.parsed(dir, 'cpuacct.usage_sys', parseCounter);
  if (user !== undefined && sys !== undefined) {
    u.cpuUserSeconds = num(user, 1e9);
    u.cpuSystemSeconds = num(sys, 1e9);
    return;
  }
  const ticks = parseKeyed(files.text(dir, 'cpuacct.stat') ?? '');
  u.cpuUserSeconds = num(ticks.get('user'), USER_HZ);
  u.cpuSystemSeconds = num(ticks.get('system'), USER_HZ);
}

function readV1Memory(dir: string, files: JobFiles, u: Mutable<JobUsage>): void {
  u.memoryBytes = num(files.parsed(dir, 'memory.usage_in_bytes', parseCounter));
  u.memoryPeakBytes = num(files.parsed(dir, 'memory.max_usage_in_bytes', parseCounter));
  u.memoryLimitBytes = num(files.parsed(dir, 'memory.limit_in_bytes', parseV1Limit));
  const byCgroup: Record<string, number> = {};
  v1OomKills(dir, '', files, byCgroup);
  if (Object.keys(byCgroup).length === 0) return;
  u.oomKillsByCgroup = byCgroup;
  u.oomKills = Object.values(byCgroup).reduce((a, b) => a + b, 0);
}

/** Steps and tasks below a v1 job: job_<J>/step_<S>/task_<T>. */
const V1_OOM_DEPTH = 2;

/**
 * v1 counts an OOM kill only in the cgroup whose limit was hit (no sum up the tree, unlike v2),
 * and Slurm limits each step as well as the job: the job's kills are the sum over its subtree.
 */
function v1OomKills(dir: string, rel: string, files: JobFiles, out: Record<string, number>): void {
  const own = parseKeyed(files.text(dir, 'memory.oom_control') ?? '').get('oom_kill');
  if (own === undefined) return;
  out[rel] = Number(own);
  const depth = rel === '' ? 0 : rel.split('/').length;
  const subs = depth < V1_OOM_DEPTH ? listSubdirs(dir) : undefined;
  for (const name of subs?.ok ? subs.value : [])
    v1OomKills(entryPath(dir, name), rel === '' ? name : `${rel}/${name}`, files, out);
}

/** v1: each controller hierarchy holding the job has its own job directory. */
function readV1(dirs: readonly JobDir[], files: JobFiles): JobUsage {
  const u: Mutable<JobUsage> = {};
  for (const { controllers, dir } of dirs) {
    const has = new Set(controllers.split(','));
    if (has.has('cpuacct')) readV1Cpuacct(dir, files, u);
    if (has.has('cpu')) {
      const cpu = parseKeyed(files.text(dir, 'cpu.stat') ?? '');
      u.throttledPeriods = num(cpu.get('nr_throttled'));
      u.throttledSeconds = num(cpu.get('throttled_time'), 1e9);
    }
    if (has.has('memory')) readV1Memory(dir, files, u);
    if (has.has('cpuset')) u.cpusAllocated = files.parsed(dir, 'cpuset.cpus', parseCpuCount) || undefined;
  }
  return u;
}

/** Only the values present, so an absent one is not mistaken for a reading. */
function defined(u: JobUsage): JobUsage {
  return Object.fromEntries(Object.entries(u).filter(([, v]) => v !== undefined)) as JobUsage;
}

/**
 * One job's usage; undefined when a job directory vanished meanwhile (a file missing from a
 * directory that is still there is only a file this kernel lacks).
 */
export function readJobUsage(dirs: readonly JobDir[], problems: Problems): JobUsage | undefined {
  if (dirs.length === 0) return undefined;
  const files = new JobFiles(problems, dirs);
  const v2 = dirs.length === 1 && dirs[0]?.controllers === '';
  const usage = v2 ? readV2(dirs[0]?.dir as string, files) : readV1(dirs, files);
  if (files.gone && dirs.some((d) => !fs.existsSync(d.dir))) return undefined;
  return defined(usage);
}
