/**
 * Slurm job allocations from the cgroup tree, in every layout Slurm writes
 * (REFERENCE.md §1): v1 per-controller trees, v2 `job_<id>` directories and
 * 26.05's bare SLUID directories, under any slice and scope name.
 */
import { entryPath, join, LIST_LIMIT, linksCountSubdirs, listSubdirs, readSmall, subdirsOf } from './roots.js';
import { type Read } from './result.js';
import type { Problems } from './problems.js';
import { WorkingDir } from './working-dir.js';

export type Layout = 'v1' | 'v2' | 'v2-sluid';
export type IdKind = 'jobid' | 'sluid' | 'unknown';

export interface Allocation {
  /** Unique on the node: the scope (or v1 root) and directory name. */
  readonly key: string;
  /** As found in the path: a numeric job id, a SLUID, or an unrecognised name. */
  readonly id: string;
  readonly idKind: IdKind;
  readonly layout: Layout;
  readonly scope: string;
  /** Job processes, every step; deduplicated. */
  readonly pids: readonly number[];
  /** slurmstepd processes (v2 `step_<S>/slurm`): used to resolve SLUIDs, also count as the job's. */
  readonly stepdPids: readonly number[];
  /** Every cgroup.procs read, to tell an exited PID from an invisible one. */
  readonly procsFiles: readonly string[];
  /** Subtrees that could not be read: the PID list may be incomplete. */
  readonly gaps: readonly string[];
  /**
   * The job directory that may carry `rdma.current`: the v2 job directory, or the v1 one under the
   * rdma hierarchy; absent where its listing showed no such file (the controller is off).
   */
  readonly rdmaDir?: string;
  /** PID → the directory (v2, or under the v1 rdma hierarchy) whose cgroup.procs listed it: its own cgroup. */
  readonly cgroupOf?: ReadonlyMap<number, string>;
  /**
   * The job's own cgroup directories: the one v2 directory (controllers ''), or in v1 one per
   * controller hierarchy holding the job (controllers as the hierarchy is named, e.g. `cpu,cpuacct`).
   */
  readonly jobDirs?: readonly JobDir[];
}

export interface JobDir {
  readonly controllers: string;
  readonly dir: string;
  /**
   * The names of the files the directory held when the walk listed it this cycle; absent where it
   * could not be listed. A file the kernel lacks (an older kernel, a controller not enabled for
   * the job) is then known absent without an open that fails: each failed open throws, which
   * costs more than twice a successful open, for every job, every cycle.
   */
  readonly files?: readonly string[];
}

/** The rdma controller's charges file in each cgroup it is enabled for (rdma-cgroup.ts). */
export const RDMA_CURRENT = 'rdma.current';

export interface ScopeInfo {
  readonly layout: Layout;
  readonly scope: string;
}

export interface CgroupScan {
  readonly allocations: readonly Allocation[];
  readonly scopes: readonly ScopeInfo[];
  /** Problems above the job level (an unreadable scope): every attribution is in doubt. */
  readonly gaps: readonly string[];
  /** Whether any Slurm hierarchy (a v1 `slurm*` tree or a v2 stepd scope) exists, readable or not. */
  readonly foundSlurm: boolean;
  /** What the scan looked for and where, for the warning when it found nothing. */
  readonly searched: string;
}

export const SLUID_RE = /^s[0-9A-HJKMNP-TV-Z]{13}$/;
const JOB_DIR_RE = /^job_(\d+)$/;
const SCOPE_RE = /^(?:.+_)?slurmstepd\.scope$/;
const V1_ROOT_RE = /^slurm(?:_.+)?$/;
// Directories under the scope that are Slurm's own, not jobs.
const NOT_JOBS = new Set(['system', 'slurmd']);
const MAX_SLICE_DEPTH = 8;
/** cgroup.procs: a PID a line, up to a job of ~500k processes. */
const PROCS_READ = { limit: LIST_LIMIT, shortRecords: true } as const;
const MAX_JOB_DEPTH = 6;

const V2_SEARCH = '`*slurmstepd.scope` under `*.slice`';

export function scanCgroups(cgroupfs: string, problems: Problems): CgroupScan {
  const acc = new ScanAccumulator();
  try {
    return scanTrees(cgroupfs, acc, problems);
  } finally {
    acc.wd.leave();
  }
}

function scanTrees(cgroupfs: string, acc: ScanAccumulator, problems: Problems): CgroupScan {
  if (isUnified(cgroupfs)) {
    scanV2(cgroupfs, '', 0, acc, problems);
    return acc.result(`${V2_SEARCH} in the cgroup v2 tree ${cgroupfs}`);
  }
  scanV1(cgroupfs, acc, problems);
  const unified = join(cgroupfs, 'unified');
  scanV2(unified, 'unified', 0, acc, problems);
  return acc.result(`\`slurm*\` under each cgroup v1 controller in ${cgroupfs}, and ${V2_SEARCH} in ${unified}`);
}

/**
 * A v2 root has `cgroup.controllers`; a copied or bind-mounted v2 tree may
 * lack it, and is then told from a v1 root (one directory per controller)
 * by its `*.slice` directories.
 */
function isUnified(cgroupfs: string): boolean {
  if (readSmall(join(cgroupfs, 'cgroup.controllers')).ok) return true;
  const subs = listSubdirs(cgroupfs);
  return subs.ok && subs.value.some((name) => name.endsWith('.slice'));
}

class ScanAccumulator {
  /** Each job's tree is walked from within its directory (walkJobDir). */
  readonly wd = new WorkingDir();
  readonly allocations = new Map<string, MutableAllocation>();
  readonly scopes = new Map<string, ScopeInfo>();
  readonly gaps: string[] = [];
  foundSlurm = false;

  /**
   * One layout per scope: a v2 scope is `v2` until a bare SLUID job directory shows it is 26.05's
   * (then `v2-sluid`, also when job_<id> directories sit beside it: the scope's slurmstepd is 26.05+).
   */
  scope(layout: Layout, scope: string): void {
    const key = `${layout === 'v1' ? 'v1' : 'v2'} ${scope}`;
    const known = this.scopes.get(key);
    if (known?.layout === 'v2-sluid') return;
    this.scopes.set(key, { layout, scope });
  }

  result(searched: string): CgroupScan {
    const allocations = [...this.allocations.values()].map((a) => ({
      ...a,
      pids: [...a.pids],
      stepdPids: [...a.stepdPids],
    }));
    return { allocations, scopes: [...this.scopes.values()], gaps: this.gaps, foundSlurm: this.foundSlurm, searched };
  }
}

interface MutableAllocation {
  key: string;
  id: string;
  idKind: IdKind;
  layout: Layout;
  scope: string;
  pids: Set<number>;
  stepdPids: Set<number>;
  procsFiles: string[];
  gaps: string[];
  rdmaDir?: string;
  cgroupOf: Map<number, string>;
  jobDirs: JobDir[];
}

function noteGap(r: Read<unknown>, where: string, gaps: string[], problems: Problems): void {
  if (r.ok || r.kind === 'gone') return;
  gaps.push(r.detail);
  problems.add('cgroup', r.kind, `${where}: ${r.detail}`);
}

/** Walks `*.slice` directories (any depth, bounded) for Slurm's stepd scopes. */
function scanV2(dir: string, rel: string, depth: number, acc: ScanAccumulator, problems: Problems): void {
  const subs = listSubdirs(dir);
  if (!subs.ok) {
    if (depth > 0) noteGap(subs, 'slice', acc.gaps, problems);
    return;
  }
  for (const name of subs.value) {
    const childRel = rel ? `${rel}/${name}` : name;
    if (SCOPE_RE.test(name)) scanScope(join(dir, name), childRel, acc, problems);
    else if (name.endsWith('.slice') && depth < MAX_SLICE_DEPTH)
      scanV2(join(dir, name), childRel, depth + 1, acc, problems);
  }
}

function scanScope(dir: string, scope: string, acc: ScanAccumulator, problems: Problems): void {
  acc.foundSlurm = true;
  const subs = listSubdirs(dir);
  if (!subs.ok) return noteGap(subs, 'scope', acc.gaps, problems);
  acc.scope('v2', scope);
  const byLinks = linksCountSubdirs(dir);
  for (const name of subs.value) {
    if (NOT_JOBS.has(name)) continue;
    const numeric = JOB_DIR_RE.exec(name);
    const idKind: IdKind = numeric ? 'jobid' : SLUID_RE.test(name) ? 'sluid' : 'unknown';
    const layout: Layout = idKind === 'sluid' ? 'v2-sluid' : 'v2';
    if (idKind === 'sluid') acc.scope('v2-sluid', scope);
    const alloc = newAllocation(`${scope}/${name}`, numeric?.[1] ?? name, idKind, layout, scope);
    const jobDir = entryPath(dir, name);
    const files = walkJobDir(jobDir, acc.wd, alloc, { own: true, byLinks }, problems);
    if (mayHold(files, RDMA_CURRENT)) alloc.rdmaDir = jobDir;
    alloc.jobDirs.push(jobDirOf('', jobDir, files));
    acc.allocations.set(alloc.key, alloc);
  }
}

/** v1: `<controller>/slurm[_<node>]/uid_<U>/job_<J>/...`; one job under several controllers counts once. */
function scanV1(cgroupfs: string, acc: ScanAccumulator, problems: Problems): void {
  const controllers = listSubdirs(cgroupfs);
  if (!controllers.ok) return noteGap(controllers, 'cgroupfs', acc.gaps, problems);
  for (const ctrl of controllers.value) {
    if (ctrl === 'unified') continue;
    const roots = listSubdirs(join(cgroupfs, ctrl));
    if (!roots.ok) {
      noteGap(roots, 'controller', acc.gaps, problems);
      continue;
    }
    for (const root of roots.value.filter((r) => V1_ROOT_RE.test(r)))
      scanV1Root(join(cgroupfs, ctrl, root), root, ctrl, acc, problems);
  }
}

function scanV1Root(dir: string, root: string, ctrl: string, acc: ScanAccumulator, problems: Problems): void {
  const rdma = ctrl.split(',').includes('rdma');
  acc.foundSlurm = true;
  acc.scope('v1', root);
  const uids = listSubdirs(dir);
  if (!uids.ok) return noteGap(uids, 'v1 root', acc.gaps, problems);
  const byLinks = linksCountSubdirs(dir);
  for (const uid of uids.value.filter((u) => u.startsWith('uid_'))) {
    const jobs = listSubdirs(join(dir, uid));
    if (!jobs.ok) {
      noteGap(jobs, 'v1 uid', acc.gaps, problems);
      continue;
    }
    for (const name of jobs.value) {
      const numeric = JOB_DIR_RE.exec(name);
      if (!numeric) continue;
      const key = `${root}/${name}`;
      let alloc = acc.allocations.get(key);
      if (!alloc) {
        alloc = newAllocation(key, numeric[1] as string, 'jobid', 'v1', root);
        acc.allocations.set(key, alloc);
      }
      const jobDir = entryPath(entryPath(dir, uid), name);
      const files = walkJobDir(jobDir, acc.wd, alloc, { own: rdma, byLinks }, problems);
      if (rdma && mayHold(files, RDMA_CURRENT)) alloc.rdmaDir = jobDir;
      alloc.jobDirs.push(jobDirOf(ctrl, jobDir, files));
    }
  }
}

function newAllocation(key: string, id: string, idKind: IdKind, layout: Layout, scope: string): MutableAllocation {
  return {
    key,
    id,
    idKind,
    layout,
    scope,
    pids: new Set(),
    stepdPids: new Set(),
    procsFiles: [],
    gaps: [],
    cgroupOf: new Map(),
    jobDirs: [],
  };
}

/** How a job's tree is walked. */
interface Walk {
  /** The directories are the processes' own cgroups (v2, or the v1 rdma hierarchy): noted in cgroupOf. */
  readonly own: boolean;
  /** A link count of 2 tells a leaf, which is then not listed (roots.ts subdirsOf). */
  readonly byLinks: boolean;
}

/** Whether a directory may hold a file: its listing names it, or there was none. */
function mayHold(files: readonly string[] | undefined, name: string): boolean {
  return files === undefined || files.includes(name);
}

function jobDirOf(controllers: string, dir: string, files: readonly string[] | undefined): JobDir {
  return files === undefined ? { controllers, dir } : { controllers, dir, files };
}

/**
 * Walks a job's tree from within its directory (working-dir.ts): the names the kernel walks for
 * each file are those below the job, not the whole path from the root of cgroupfs. Where the
 * directory cannot be entered, by whole paths. The working directory stays the job's until the next
 * job's is entered or the scan ends (scanCgroups gives the agent's back): one change a job, and
 * every other path the scan names is whole. Returns walkJob's listing of the job directory.
 */
function walkJobDir(
  dir: string,
  wd: WorkingDir,
  alloc: MutableAllocation,
  walk: Walk,
  problems: Problems,
): readonly string[] | undefined {
  return walkJob({ dir, local: wd.enter(dir) ? '.' : dir }, [], alloc, walk, problems);
}

/** A directory of a job's tree: its whole path (kept, and named in errors) and the one read. */
interface TreeDir {
  readonly dir: string;
  /** `dir` relative to the working directory (`.` for the job directory entered), or `dir` itself. */
  readonly local: string;
}

/** An entry of a TreeDir, for the system call. */
function localEntry(d: TreeDir, name: string): string {
  return d.local === '.' ? name : entryPath(d.local, name);
}

/**
 * Reads cgroup.procs at every level below the job: processes live in leaves, not at the job level.
 * Returns the names of the files in the directory where it was listed (a job's own directory is,
 * unless the listing fails).
 */
function walkJob(
  d: TreeDir,
  rel: string[],
  alloc: MutableAllocation,
  walk: Walk,
  problems: Problems,
): readonly string[] | undefined {
  const procsPath = entryPath(d.dir, 'cgroup.procs');
  const procs = readSmall(localEntry(d, 'cgroup.procs'), PROCS_READ, procsPath);
  if (!procs.ok) noteGap(procs, `job ${alloc.id}`, alloc.gaps, problems);
  else {
    alloc.procsFiles.push(procsPath);
    // v2 puts each step's slurmstepd in step_<S>/slurm.
    const into = rel.length === 2 && rel[1] === 'slurm' && rel[0]?.startsWith('step_') ? alloc.stepdPids : alloc.pids;
    for (const pid of parsePids(procs.value)) {
      into.add(pid);
      if (walk.own) alloc.cgroupOf.set(pid, d.dir);
    }
  }
  if (rel.length >= MAX_JOB_DEPTH) return undefined;
  // A job's directory and its steps' hold Slurm's own subdirectories: listed straight away. Below
  // them most directories are leaves (tasks), each told by one stat.
  const entries = subdirsOf(d.local, walk.byLinks && rel.length >= 2, d.dir);
  if (!entries.ok) {
    noteGap(entries, `job ${alloc.id}`, alloc.gaps, problems);
    return undefined;
  }
  for (const name of entries.value.subdirs) {
    const sub = { dir: entryPath(d.dir, name), local: localEntry(d, name) };
    walkJob(sub, [...rel, name], alloc, walk, problems);
  }
  return entries.value.others;
}

export function parsePids(text: string): number[] {
  const out: number[] = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (t === '') continue;
    const n = Number(t);
    if (Number.isInteger(n) && n > 0) out.push(n);
  }
  return out;
}

/** Re-reads an allocation's cgroup.procs: true when `pid` is no longer listed (it exited). */
export function pidLeft(alloc: Allocation, pid: number): boolean {
  for (const file of alloc.procsFiles) {
    const r = readSmall(file, PROCS_READ);
    if (r.ok && parsePids(r.value).includes(pid)) return false;
  }
  return true;
}

// A path in /proc/<pid>/cgroup inside a Slurm job: v2 `…slurmstepd.scope/<job>/…` (Slurm's own
// system/ and slurmd/ excluded) or v1 `…/slurm[_<node>]/uid_<U>/job_<J>…`.
const JOB_CGROUP_RE =
  /(?:^|\/)(?:[^/]*_)?slurmstepd\.scope\/(?!(?:system|slurmd)(?:\/|$))[^/]+|\/slurm(?:_[^/]+)?\/uid_\d+\/job_\d+(?:\/|$)/;

/** Whether a cgroup path (as in /proc/<pid>/cgroup) lies inside a Slurm job. */
export function inSlurmJob(cgroupPath: string): boolean {
  return JOB_CGROUP_RE.test(cgroupPath);
}

/** One line of /proc/<pid>/cgroup. */
export interface CgroupLine {
  /** Empty for the v2 line (`0::/path`). */
  readonly controllers: string;
  readonly path: string;
}

export function cgroupLines(text: string): CgroupLine[] {
  const out: CgroupLine[] = [];
  for (const line of text.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line.trim());
    if (m) out.push({ controllers: m[1] as string, path: m[2] as string });
  }
  return out;
}
