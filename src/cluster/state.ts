/**
 * Transitions across successive successful refreshes: what only this process can know, because
 * it needs two observations of the same node or job. Emitted as MetricEvent records, which
 * telemetry/ accumulates in SDK synchronous instruments.
 *
 * All time comes from the snapshot (`Collected.atMs`, when each request started), so a test drives
 * the clock by building snapshots. Nothing survives a restart: the first refresh after one only
 * starts tracking (an outage in progress is then measured from that refresh, not from its start).
 */
import { event, type MetricEvent } from '../telemetry/spec.js';
import { CLUSTER_EVENT_METRICS as E } from './metrics.js';
import type { SlurmJob, SlurmNode } from './model.js';
import { JOB_TERMINAL_STATES } from './model.js';
import { isDraining, isFailed, isUnavailable, legacyStateLabels } from './node-state.js';
import type { ClusterSnapshot, Collected } from './snapshot.js';
import { parseTres } from './tres.js';
import { eachInSlices, runSteps, Slice, type Steps } from '../steps.js';

/** The last node refresh acted on, and the outages and drains in progress at that time. */
export interface NodeTracking {
  readonly seq: number;
  readonly atMs: number;
  readonly byName: ReadonlyMap<string, SlurmNode>;
  /** node name → ms since epoch when the current outage was first seen. */
  readonly unavailableSince: ReadonlyMap<string, number>;
  /** node name → ms since epoch when the current draining period was first seen. */
  readonly drainingSince: ReadonlyMap<string, number>;
}

/** A job's allocated GPU seconds, counted since this agent first saw the job. */
export interface JobGpuSeconds {
  readonly seconds: number;
  /** When counting started (the series' start time). */
  readonly sinceMs: number;
}

/**
 * The last job refresh acted on, and each listed GPU job's accumulated GPU seconds. Kept here,
 * not in an SDK counter, so a job's series ends when Slurm stops listing the job: per-job SDK
 * counters would keep every job ever seen.
 */
export interface JobTracking {
  readonly seq: number;
  readonly atMs: number;
  readonly gpuSeconds: ReadonlyMap<string, JobGpuSeconds>;
}

export interface ClusterState {
  readonly nodes?: NodeTracking;
  readonly jobs?: JobTracking;
}

export const INITIAL_CLUSTER_STATE: ClusterState = {};

export interface Advance {
  readonly state: ClusterState;
  readonly events: MetricEvent[];
}

/** Moves the state to the snapshot, acting only on sub-collector results it has not seen yet. */
export function advance(prev: ClusterState, snap: ClusterSnapshot): Advance {
  return runSteps(advanceSteps(prev, snap, new Slice()));
}

/**
 * advance in pieces, for the agent's publish: at 20,000 nodes and 100,000 jobs it yields between
 * its passes over the nodes and within the jobs when the slice is due.
 */
export function* advanceSteps(prev: ClusterState, snap: ClusterSnapshot, slice: Slice): Steps<Advance> {
  const events: MetricEvent[] = [];
  const nodes = isNew(prev.nodes, snap.nodes) ? yield* advanceNodes(prev.nodes, snap.nodes, events, slice) : prev.nodes;
  if (slice.due()) yield;
  const jobs = isNew(prev.jobs, snap.jobs) ? yield* advanceJobs(prev.jobs, snap.jobs, slice) : prev.jobs;
  return { state: { ...(nodes ? { nodes } : {}), ...(jobs ? { jobs } : {}) }, events };
}

function isNew<T>(seen: { readonly seq: number } | undefined, got: Collected<T> | undefined): got is Collected<T> {
  return got !== undefined && (seen === undefined || got.seq > seen.seq);
}

/**
 * The result of `f` for each list, computed once: a stored result list is never changed, and
 * the state and several rules ask for the same index of it in every publish.
 */
function perList<T extends object, R>(f: (list: readonly T[]) => R): (list: readonly T[]) => R {
  const results = new WeakMap<readonly T[], R>();
  return (list) => {
    let r = results.get(list);
    if (r === undefined) {
      r = f(list);
      results.set(list, r);
    }
    return r;
  };
}

/** Last record per name: a name listed twice is a slurmrestd glitch, and the last is the freshest. */
export const nodesByName: (nodes: readonly SlurmNode[]) => ReadonlyMap<string, SlurmNode> = perList((nodes) => {
  const byName = new Map<string, SlurmNode>();
  for (const n of nodes) byName.set(n.name, n);
  return byName;
});

/** Last record per job id, for the same reason. */
export const uniqueJobs: (jobs: readonly SlurmJob[]) => readonly SlurmJob[] = perList((jobs) => {
  const ids = new Set<string>();
  for (const j of jobs) ids.add(j.job_id);
  // The usual case, no id twice: the list as it is (100k jobs need no second copy).
  if (ids.size === jobs.length) return jobs;
  const byId = new Map<string, SlurmJob>();
  for (const j of jobs) byId.set(j.job_id, j);
  return [...byId.values()];
});

function* advanceNodes(
  prev: NodeTracking | undefined,
  got: Collected<readonly SlurmNode[]>,
  events: MetricEvent[],
  slice: Slice,
): Steps<NodeTracking> {
  const byName = nodesByName(got.value);
  const before = prev?.byName ?? new Map<string, SlurmNode>();
  if (prev) nodeFails(before, byName, events);
  if (slice.due()) yield;
  nodeGpuSeconds(before, byName, prev ? (got.atMs - prev.atMs) / 1000 : 0, events);
  if (slice.due()) yield;
  const unavailableSince = trackPeriods(before, byName, prev?.unavailableSince, got.atMs, isUnavailable, (d, n) =>
    events.push(event(E.nodeUnavailability, { node_name: n }, d)),
  );
  if (slice.due()) yield;
  const drainingSince = trackPeriods(before, byName, prev?.drainingSince, got.atMs, isDraining, (d, n) =>
    events.push(event(E.nodeDraining, { node_name: n }, d)),
  );
  return { seq: got.seq, atMs: got.atMs, byName, unavailableSince, drainingSince };
}

/** One increment per node that went from healthy to DOWN/DRAIN, with the state and reason now. */
function nodeFails(
  before: ReadonlyMap<string, SlurmNode>,
  now: ReadonlyMap<string, SlurmNode>,
  events: MetricEvent[],
): void {
  for (const [name, node] of now) {
    const was = before.get(name);
    if (was === undefined || isFailed(was.state) || !isFailed(node.state)) continue;
    events.push(
      event(E.nodeFails, { node_name: name, ...legacyStateLabels(node.state), reason: node.reason ?? '' }, 1),
    );
  }
}

/**
 * Elapsed × configured GPUs for nodes seen at both refreshes. The interval is attributed to the
 * state the node had at its start (Soperator uses the state at its end): a node that failed
 * mid-interval was still serving when last seen. A GPU node's current state also gets its series
 * at once (an increment of 0), so a node first seen, or seen in a new state, is on /metrics from
 * that refresh on, as with Soperator, instead of one refresh later. Nodes without GPUs add
 * nothing, so get no series.
 */
function nodeGpuSeconds(
  before: ReadonlyMap<string, SlurmNode>,
  now: ReadonlyMap<string, SlurmNode>,
  elapsedS: number,
  events: MetricEvent[],
): void {
  for (const [name, node] of now) {
    const was = before.get(name);
    const wasGpus = was !== undefined && elapsedS > 0 ? gpuCount(was) : 0;
    const wasLabels = was !== undefined ? legacyStateLabels(was.state) : undefined;
    if (wasGpus > 0 && wasLabels !== undefined)
      events.push(event(E.nodeGpuSeconds, { node_name: name, ...wasLabels }, elapsedS * wasGpus));
    if (gpuCount(node) <= 0) continue;
    const labels = legacyStateLabels(node.state);
    if (wasGpus > 0 && wasLabels !== undefined && sameLabels(wasLabels, labels)) continue;
    events.push(event(E.nodeGpuSeconds, { node_name: name, ...labels }, 0));
  }
}

function gpuCount(node: SlurmNode): number {
  return parseTres(node.tres).gpus ?? 0;
}

function sameLabels(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

/**
 * Start/stop bookkeeping for one condition: a period starts at the refresh that first sees the
 * node in it, and its length is reported at the refresh that first sees the node out of it.
 * Nodes no longer listed are forgotten with their open periods.
 */
function trackPeriods(
  before: ReadonlyMap<string, SlurmNode>,
  now: ReadonlyMap<string, SlurmNode>,
  since: ReadonlyMap<string, number> | undefined,
  atMs: number,
  inPeriod: (s: SlurmNode['state']) => boolean,
  ended: (durationS: number, name: string) => void,
): Map<string, number> {
  const next = new Map<string, number>();
  for (const [name, node] of now) {
    const was = before.get(name);
    const wasIn = was !== undefined && inPeriod(was.state);
    const start = since?.get(name);
    if (inPeriod(node.state)) {
      next.set(name, wasIn && start !== undefined ? start : atMs);
    } else if (wasIn && start !== undefined) {
      ended(Math.max(0, (atMs - start) / 1000), name);
    }
  }
  return next;
}

/**
 * For each listed job, adds the part of its run that falls inside (previous refresh, this one] ×
 * its allocated GPUs. Clipping to the job's own start and end credits jobs that started or ended
 * between refreshes for exactly their share, and never counts an interval twice. Jobs no longer
 * listed are dropped with their totals.
 */
function* advanceJobs(
  prev: JobTracking | undefined,
  got: Collected<readonly SlurmJob[]>,
  slice: Slice,
): Steps<JobTracking> {
  const gpuSeconds = new Map<string, JobGpuSeconds>();
  const add = (job: SlurmJob): void => {
    const g = jobGpuSeconds(job, prev, got.atMs);
    if (g !== undefined) gpuSeconds.set(job.job_id, g);
  };
  yield* eachInSlices(uniqueJobs(got.value), add, slice);
  return { seq: got.seq, atMs: got.atMs, gpuSeconds };
}

/** A job's GPU seconds after this refresh; undefined for a job that never held a GPU while tracked. */
function jobGpuSeconds(job: SlurmJob, prev: JobTracking | undefined, toMs: number): JobGpuSeconds | undefined {
  const fromMs = prev?.atMs;
  const gpus = parseTres(job.tres_alloc_str).gpus ?? 0;
  const before = prev?.gpuSeconds.get(job.job_id);
  const run = gpus > 0 ? runWindowMs(job, toMs) : undefined;
  if (run === undefined && before === undefined) return undefined;
  const added =
    run !== undefined && fromMs !== undefined && toMs > fromMs
      ? Math.max(0, (Math.min(toMs, run.endMs) - Math.max(fromMs, run.startMs)) / 1000) * gpus
      : 0;
  return { seconds: (before?.seconds ?? 0) + added, sinceMs: before?.sinceMs ?? toMs };
}

/**
 * When a job held its allocation: from its start to its real end (terminal) or to now (RUNNING).
 * Pending and suspended jobs hold nothing we count; a terminal job without an end is unknowable.
 */
export function runWindowMs(job: SlurmJob, nowMs: number): { startMs: number; endMs: number } | undefined {
  if (job.start_time === undefined) return undefined;
  const base = job.state[0] ?? '';
  if (base === 'RUNNING') return { startMs: job.start_time * 1000, endMs: nowMs };
  if (JOB_TERMINAL_STATES.has(base) && job.end_time !== undefined)
    return { startMs: job.start_time * 1000, endMs: job.end_time * 1000 };
  return undefined;
}
