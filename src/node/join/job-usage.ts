/**
 * Per-job usage of a cycle, by job id, and when each usage counter started. The cgroup's own
 * counters start at 0 with the job's cgroup; one that goes down (the job's cgroup made anew under
 * the same id, e.g. a requeued job back on this node) starts a new series, as a device counter does.
 */
import type { JobUsage } from '../read/job-usage.js';
import { readJobUsage } from '../read/job-usage.js';
import type { Problems } from '../read/problems.js';
import type { JobDir } from '../read/cgroups.js';

/** The usage values that are counters (the rest are gauges). */
export const USAGE_COUNTERS = [
  'cpuUserSeconds',
  'cpuSystemSeconds',
  'throttledPeriods',
  'throttledSeconds',
  'oomKills',
] as const;
export type UsageCounter = (typeof USAGE_COUNTERS)[number];

/** Keyed by `<job id> <counter>`. */
export type UsageStarts = ReadonlyMap<string, { readonly startMs: number; readonly last: number }>;

/**
 * Usage of each resolved job. A job id found in more than one job cgroup on the node (two slurmd
 * on one host sharing a multi-node job) has no usage: its cgroups' values are not one job's
 * figures on one node, and a sum would pass a peak for what it is not.
 */
/** What jobUsages needs of a job allocation (snapshot.ts's JobAllocation, which imports this file). */
interface JobCgroups {
  readonly jobId?: string;
  readonly jobDirs?: readonly JobDir[];
}

export function jobUsages(allocations: readonly JobCgroups[], problems: Problems): Map<string, JobUsage> {
  const count = new Map<string, number>();
  for (const a of allocations) if (a.jobId !== undefined) count.set(a.jobId, (count.get(a.jobId) ?? 0) + 1);
  const out = new Map<string, JobUsage>();
  for (const a of allocations) {
    if (a.jobId === undefined || count.get(a.jobId) !== 1) continue;
    const u = readJobUsage(a.jobDirs ?? [], problems);
    if (u !== undefined) out.set(a.jobId, u);
  }
  return out;
}

/** Each counter's start after this cycle; those of jobs without usage now are dropped. */
export function usageStarts(usage: ReadonlyMap<string, JobUsage>, prev: UsageStarts, atMs: number): UsageStarts {
  const next = new Map<string, { startMs: number; last: number }>();
  for (const [jobId, u] of usage) {
    for (const c of USAGE_COUNTERS) {
      const value = u[c];
      if (value === undefined) continue;
      const key = `${jobId} ${c}`;
      const before = prev.get(key);
      next.set(key, { startMs: before && value >= before.last ? before.startMs : atMs, last: value });
    }
  }
  // A counter missing from one reading of a job still there (a failed read) has not restarted.
  for (const [key, v] of prev) if (!next.has(key) && usage.has(key.slice(0, key.indexOf(' ')))) next.set(key, v);
  return next;
}

/** v1 OOM kills kept across cycles, by job id: each cgroup's last count, and those of cgroups gone. */
export type OomHeld = ReadonlyMap<string, { readonly last: Readonly<Record<string, number>>; readonly gone: number }>;

/**
 * v1 OOM kills that never go down while the job lives. v1 counts a kill in the step (or task)
 * cgroup whose limit was hit, and Slurm removes a step's cgroup when the step ends: the sum over
 * the cgroups present would then drop, and read as a counter reset. A cgroup that is gone (or
 * whose count went down: made anew under the same name) keeps its last count in `gone`. Jobs
 * without usage now are dropped; v2 counts are the kernel's own hierarchical sum and pass as read.
 */
export function holdOomKills(
  usage: ReadonlyMap<string, JobUsage>,
  prev: OomHeld,
): { usage: Map<string, JobUsage>; held: OomHeld } {
  const out = new Map<string, JobUsage>();
  const held = new Map<string, { last: Readonly<Record<string, number>>; gone: number }>();
  for (const [jobId, u] of usage) {
    const now = u.oomKillsByCgroup;
    if (now === undefined) {
      out.set(jobId, u);
      continue;
    }
    const before = prev.get(jobId);
    let gone = before?.gone ?? 0;
    for (const [rel, count] of Object.entries(before?.last ?? {})) {
      const current = now[rel];
      if (current === undefined || current < count) gone += count;
    }
    held.set(jobId, { last: now, gone });
    out.set(jobId, gone === 0 ? u : { ...u, oomKills: (u.oomKills ?? 0) + gone });
  }
  return { usage: out, held };
}
