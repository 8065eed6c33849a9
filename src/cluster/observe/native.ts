/**
 * Slurm's own metric families (what slurmctld 25.11+ serves with `metrics/openmetrics`), computed
 * from the sub-collectors' results: nodes and node-state counts from /nodes, job counts from
 * /jobs, partitions from /partitions joined with both, the scheduler from /diag. A family whose
 * source the API version does not carry (a diag field; a node's effective CPUs before v0.0.40,
 * where the idle CPU counts use its configured CPUs instead) is left out, never reported as 0;
 * counts over a list that was read are real zeros.
 */
import { NATIVE_NODE_SHARED_METRICS as NS, NATIVE_NODE_SHARED_OTLP_METRICS } from '../metrics.js';
import type { ClusterSnapshot } from '../snapshot.js';
import { nodesByName, uniqueJobs } from '../state.js';
import { holdsJobs, hostsCache, jobView, NO_HOSTS_OF, tresCache } from './native-counting.js';
import { schedulerFamilies } from './native-scheduler.js';
import type { NativeFamily } from './helpers.js';
import { nodeFamilies, sharedNodeFamilies } from './native-nodes.js';
import { jobFamilySteps } from './native-jobs.js';
import { partitionFamilySteps } from './native-partitions.js';
import { mapInSlices, runSteps, Slice, type Steps } from '../../steps.js';

export interface NativeOptions {
  /** The per-user and per-account job families on `/metrics` too (`--user-account-metrics`). */
  readonly userAccountMetrics?: boolean;
  /** Families already computed for this snapshot (the agent computes them once per publish). */
  readonly groups?: NativeGroups;
}

/** The paths slurmctld serves its families under, each with the families it serves there. */
export const NATIVE_PATHS = [
  '/metrics/nodes',
  '/metrics/jobs',
  '/metrics/partitions',
  '/metrics/scheduler',
  '/metrics/jobs-users-accts',
] as const;
export type NativePath = (typeof NATIVE_PATHS)[number];

/** One snapshot's native families, by the slurmctld path that serves them. */
export interface NativeGroups {
  readonly nodes: readonly NativeFamily[];
  /** On `/metrics/nodes` only: their names mean something else on `/metrics`. */
  readonly nodesShared: readonly NativeFamily[];
  /** The same under their OTLP names. */
  readonly nodesSharedOtlp: readonly NativeFamily[];
  readonly jobs: readonly NativeFamily[];
  readonly usersAccounts: readonly NativeFamily[];
  readonly partitions: readonly NativeFamily[];
  readonly scheduler: readonly NativeFamily[];
}

/**
 * `usersAccounts`: the per-user and per-account families are computed only when asked for
 * (`--user-account-metrics`): at 100k jobs they cost two more passes over the jobs per publish.
 */
export function nativeGroups(snap: ClusterSnapshot, usersAccounts = false): NativeGroups {
  return runSteps(nativeGroupSteps(snap, usersAccounts, new Slice()));
}

/**
 * nativeGroups in pieces, for the agent's publish: at 100,000 jobs the whole takes a few hundred
 * milliseconds, three passes over the jobs most of it (their views, the job families, the
 * partitions' job families). It yields within each pass and between the families when the slice
 * is due.
 */
export function* nativeGroupSteps(snap: ClusterSnapshot, usersAccounts: boolean, slice: Slice): Steps<NativeGroups> {
  const nodes = snap.nodes ? [...nodesByName(snap.nodes.value).values()] : undefined;
  const tres = tresCache();
  const hosts = hostsCache();
  // Expanding every running job's hostlist is the costliest step at 100k jobs: the whole
  // cluster's distinct nodes come from /nodes when it is there, job by job only per user/account.
  const expand = usersAccounts || nodes === undefined ? hosts : NO_HOSTS_OF;
  const jobs = snap.jobs
    ? yield* mapInSlices(uniqueJobs(snap.jobs.value), (j) => jobView(j, expand), slice)
    : undefined;
  const busy = nodes === undefined ? undefined : nodes.filter(holdsJobs).length;
  const jobGroups = jobs ? yield* jobFamilySteps(jobs, tres, usersAccounts, busy, slice) : undefined;
  if (slice.due()) yield;
  const nodeGroups = nodes ? nodeFamilies(nodes, tres) : [];
  if (slice.due()) yield;
  const partitions = snap.partitions
    ? yield* partitionFamilySteps(snap.partitions.value, nodes, jobs, tres, slice)
    : [];
  return {
    nodes: nodeGroups,
    nodesShared: nodes ? sharedNodeFamilies(nodes, NS) : [],
    nodesSharedOtlp: nodes ? sharedNodeFamilies(nodes, NATIVE_NODE_SHARED_OTLP_METRICS) : [],
    jobs: jobGroups?.all ?? [],
    usersAccounts: jobGroups?.usersAccounts ?? [],
    partitions,
    scheduler: snap.diag ? schedulerFamilies(snap.diag.value) : [],
  };
}

/** What `/metrics` carries of Slurm's own set: all but the four shared names. */
export function nativeFamilies(snap: ClusterSnapshot, opts: NativeOptions = {}): NativeFamily[] {
  const g = opts.groups ?? nativeGroups(snap, opts.userAccountMetrics);
  return [...g.nodes, ...g.jobs, ...(opts.userAccountMetrics ? g.usersAccounts : []), ...g.partitions, ...g.scheduler];
}

/** Each slurmctld path with exactly the families slurmctld serves there. */
export function nativeSections(g: NativeGroups): ReadonlyMap<NativePath, readonly NativeFamily[]> {
  return new Map<NativePath, readonly NativeFamily[]>([
    ['/metrics/nodes', [...g.nodes, ...g.nodesShared]],
    ['/metrics/jobs', g.jobs],
    ['/metrics/partitions', g.partitions],
    ['/metrics/scheduler', g.scheduler],
    ['/metrics/jobs-users-accts', g.usersAccounts],
  ]);
}

export { arrayTaskCount, jobStateNames, nodeStateNames } from './native-states.js';
export { schedulerValue } from './native-scheduler.js';
export { nodeGpusAlloc } from './native-counting.js';
export { nativeJobPartition } from './native-partitions.js';
