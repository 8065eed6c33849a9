/** Slurm's own partition families (`/metrics/partitions`): /partitions joined with /nodes and /jobs. */
import { point, type Family } from '../../telemetry/spec.js';
import { expandHostlist } from '../hostlist.js';
import { NATIVE_JOB_STATES, NATIVE_PARTITION_METRICS as P, NATIVE_PARTITION_NODE_STATES } from '../metrics.js';
import { JOB_TERMINAL_STATES, type SlurmJob, type SlurmNode, type SlurmPartition } from '../model.js';
import {
  addJob,
  newTotals,
  nodeCpusIdle,
  nodeGpus,
  nodeMemoryEffective,
  type JobTotals,
  type JobView,
  type TresOf,
} from './native-counting.js';
import { countStates, isHeld, nodeStateNames, PARTITION_NAMES } from './native-states.js';
import { gaugeOf, type GaugeSpec } from './helpers.js';
import { eachInSlices, type Slice, type Steps } from '../../steps.js';

/** A partition's nodes: its hostlist; the nodes' own partition lists when the hostlist is unreadable. */
function partitionNodes(
  p: SlurmPartition,
  byName: ReadonlyMap<string, SlurmNode>,
  all: readonly SlurmNode[],
): SlurmNode[] {
  try {
    return expandHostlist(p.nodes).flatMap((n) => byName.get(n) ?? []);
  } catch {
    return all.filter((n) => n.partitions.includes(p.name));
  }
}

/** The Slinky autoscaling figures of a partition's pending jobs: largest node counts asked for. */
interface PendingNodes {
  max: number;
  min: number;
  maxNohold: number;
  minNohold: number;
  waitNodeLimit: number;
}

/**
 * The partition families, in pieces (nativeGroupSteps): the pass over 100,000 jobs yields within
 * when the slice is due, and the families of the nodes and of the jobs are pieces apart.
 */
export function* partitionFamilySteps(
  parts: readonly SlurmPartition[],
  nodes: readonly SlurmNode[] | undefined,
  jobs: readonly JobView[] | undefined,
  tres: TresOf,
  slice: Slice,
): Steps<Family[]> {
  const named = [...new Map(parts.map((p) => [p.name, p])).values()];
  const per = (spec: GaugeSpec<'partition'>, value: (p: SlurmPartition) => number | undefined): Family => ({
    spec,
    points: named.flatMap((p) => {
      const v = value(p);
      return v === undefined || !Number.isFinite(v) ? [] : [point(spec, { partition: p.name }, v)];
    }),
  });
  const ofNodes = nodes ? yield* partitionNodeFamilies(named, nodes, per, tres, slice) : [];
  if (slice.due()) yield;
  const ofJobs = jobs ? yield* partitionJobFamilies(named, jobs, tres, per, slice) : [];
  return [gaugeOf(P.partitions, named.length), per(P.cpus, (p) => p.total_cpus), ...ofNodes, ...ofJobs];
}

type PerPartition = (spec: GaugeSpec<'partition'>, value: (p: SlurmPartition) => number | undefined) => Family;

/**
 * The partitions' node families. Each partition's nodes (its hostlist expanded) and their states
 * are a pass over up to every node each: pieces apart.
 */
function* partitionNodeFamilies(
  parts: readonly SlurmPartition[],
  nodes: readonly SlurmNode[],
  per: PerPartition,
  tres: TresOf,
  slice: Slice,
): Steps<Family[]> {
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const members = new Map(parts.map((p) => [p.name, partitionNodes(p, byName, nodes)]));
  const of = (p: SlurmPartition): SlurmNode[] => members.get(p.name) ?? [];
  if (slice.due()) yield;
  const rename = (n: string): string => PARTITION_NAMES[n] ?? n;
  const states = new Map(
    parts.map((p) => [p.name, countStates(NATIVE_PARTITION_NODE_STATES, of(p).map(nodeStateNames), rename)]),
  );
  const ofStates = [
    per(P.nodes, (p) => p.total_nodes ?? of(p).length),
    ...NATIVE_PARTITION_NODE_STATES.map((s) => per(P.nodeStates[s], (p) => states.get(p.name)?.[s])),
  ];
  if (slice.due()) yield;
  /** A sum over the partition's nodes; absent when no node reports the value (an older API). */
  const sum =
    (value: (n: SlurmNode) => number | undefined) =>
    (p: SlurmPartition): number | undefined => {
      let total: number | undefined;
      for (const n of of(p)) {
        const v = value(n);
        if (v !== undefined) total = (total ?? 0) + v;
      }
      return total;
    };
  return [
    ...ofStates,
    per(
      P.cpusAlloc,
      sum((n) => n.alloc_cpus),
    ),
    per(P.cpusIdle, sum(nodeCpusIdle)),
    per(
      P.cpusEffective,
      sum((n) => n.effective_cpus),
    ),
    per(
      P.memAlloc,
      sum((n) => n.alloc_memory),
    ),
    per(P.memAvail, sum(nodeMemoryEffective)),
    per(
      P.memFree,
      sum((n) => n.free_mem ?? 0),
    ),
    per(
      P.memTotal,
      sum((n) => n.real_memory),
    ),
    per(P.gpus, (p) => of(p).reduce((t, n) => t + nodeGpus(n, tres), 0)),
  ];
}

/** Each partition's PriorityTier by name (absent: Slurm's default, 1). */
export type PartitionTiers = ReadonlyMap<string, number>;

/** Reasons of a pending job slurmctld's schedulers never queue (held, waiting on a dependency or a begin time). */
const NEVER_QUEUED = new Set([
  'JobHeldUser',
  'JobHeldAdmin',
  'JobHoldMaxRequeue',
  'BadConstraints',
  'BurstBufferOperation',
  'Dependency',
  'DependencyNeverSatisfied',
  'BeginTime',
  'Cleaning',
]);

type MultiJob = Pick<
  SlurmJob,
  'partition' | 'state_reason' | 'submit_time' | 'last_sched_evaluation' | 'priority_by_partition'
>;

/**
 * The one partition slurmctld counts a job in: the job's partition, or, for a pending job
 * submitted to several (`cpu,gpu`), the one its schedulers left it at. slurmctld keeps the
 * partitions highest tier first (ties in the order listed). Each scheduler pass tries the job in
 * them in that order, equal tiers by the job's priority there (highest first), and leaves it at
 * the last one. A job no pass has queued (held, waiting on a dependency or a begin time, and not
 * evaluated since its submission second) stays where submission left it: the first.
 */
export function nativeJobPartition(job: MultiJob, tiers: PartitionTiers = new Map()): string | undefined {
  const one = job.partition;
  if (one !== undefined && !one.includes(',')) return one === '' ? undefined : one;
  const listed = [...new Set((one ?? '').split(',').filter((p) => p !== ''))];
  const tier = (p: string): number => tiers.get(p) ?? 1;
  // Array.prototype.sort is stable: equal keys keep the listed order, as slurmctld's sort does.
  const byTier = listed.sort((a, b) => tier(b) - tier(a));
  if (neverQueued(job)) return byTier[0];
  if (job.priority_by_partition === undefined) return byTier[byTier.length - 1];
  const priority = new Map(job.priority_by_partition.map((e) => [e.partition, e.priority]));
  const tried = byTier.sort((a, b) => tier(b) - tier(a) || (priority.get(b) ?? 0) - (priority.get(a) ?? 0));
  return tried[tried.length - 1];
}

/** slurmctld stamps last_sched_evaluation at submission, then at each scheduler pass that queues the job. */
function neverQueued(job: MultiJob): boolean {
  if (!NEVER_QUEUED.has(job.state_reason ?? '')) return false;
  const evaluated = job.last_sched_evaluation;
  return evaluated === undefined || job.submit_time === undefined || evaluated <= job.submit_time;
}

/** Finished with nothing left completing: slurmctld leaves such a record out of a partition's `jobs`. */
function isCompleted(job: SlurmJob): boolean {
  return JOB_TERMINAL_STATES.has(job.state[0] ?? '') && !job.state.includes('COMPLETING');
}

function* partitionJobFamilies(
  parts: readonly SlurmPartition[],
  jobs: readonly JobView[],
  tres: TresOf,
  per: PerPartition,
  slice: Slice,
): Steps<Family[]> {
  const totals = new Map(parts.map((p) => [p.name, newTotals()]));
  const pending = new Map(
    parts.map((p): [string, PendingNodes] => [
      p.name,
      { max: 0, min: 0, maxNohold: 0, minNohold: 0, waitNodeLimit: 0 },
    ]),
  );
  const tiers: PartitionTiers = new Map(
    parts.flatMap((p): [string, number][] => (p.priority_tier === undefined ? [] : [[p.name, p.priority_tier]])),
  );
  yield* eachInSlices(
    jobs,
    (v) => {
      const job = v.job;
      const name = nativeJobPartition(job, tiers);
      const t = name === undefined ? undefined : totals.get(name);
      if (t === undefined) return;
      addJob(t, v, isCompleted(job) ? 0 : 1, tres);
      if (job.state[0] === 'PENDING') addPending(pending.get(name as string) as PendingNodes, job, tres);
    },
    slice,
  );
  const t = (p: SlurmPartition): JobTotals => totals.get(p.name) as JobTotals;
  const q = (p: SlurmPartition): PendingNodes => pending.get(p.name) as PendingNodes;
  return [
    per(P.jobs, (p) => t(p).jobs),
    ...NATIVE_JOB_STATES.map((s) => per(P.jobStates[s], (p) => t(p).states[s])),
    per(P.jobsCpusAlloc, (p) => t(p).cpusAlloc),
    per(P.jobsMemoryAlloc, (p) => t(p).memoryAllocMiB),
    per(P.jobsGpusAlloc, (p) => t(p).gpusAlloc),
    per(P.jobsMaxNodes, (p) => q(p).max),
    per(P.jobsMaxNodesNohold, (p) => q(p).maxNohold),
    per(P.jobsMinNodes, (p) => q(p).min),
    per(P.jobsMinNodesNohold, (p) => q(p).minNohold),
    per(P.jobsWaitNodeLimit, (p) => q(p).waitNodeLimit),
  ];
}

/**
 * slurmctld keeps the largest of the pending jobs' minimum node counts (`min_job_nodes`) and of
 * their maximum ones (`max_job_nodes`, never below the job's minimum: a job without a maximum has
 * 0). Its minimum is the job's own request (`_fill_jobs_statistics` in slurmctld's statistics.c
 * copies the job details' `min_nodes`, `_statistics_part_aggregate_job` takes the largest), which
 * slurmrestd serves as the node count of the job's requested TRES. slurmrestd's `node_count` is
 * something else for a pending job: slurmctld's guess of the nodes it will give (the scheduler's
 * last selection, or the task count over the partition's CPUs per node: `_pack_node_cnt` in
 * job_mgr.c), so `-n 8` on 4-CPU nodes reads 2 where slurmctld counts 1. It stands in only when
 * the TRES string has no node count.
 */
function addPending(q: PendingNodes, job: SlurmJob, tres: TresOf): void {
  // slurmctld tests the reason with a bitwise AND (any reason with bit 2 set); only this one is meant.
  if (job.state_reason === 'PartitionNodeLimit') q.waitNodeLimit += 1;
  const n = tres(job.tres_req_str).nodes ?? job.node_count;
  if (n === undefined) return;
  const most = Math.max(job.max_nodes ?? 0, n);
  q.max = Math.max(q.max, most);
  q.min = Math.max(q.min, n);
  if (isHeld(job)) return;
  q.maxNohold = Math.max(q.maxNohold, most);
  q.minNohold = Math.max(q.minNohold, n);
}
