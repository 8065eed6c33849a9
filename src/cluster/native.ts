/**
 * Slurm's own metric families (what slurmctld 25.11+ serves with `metrics/openmetrics`), computed
 * from the sub-collectors' results: nodes and node-state counts from /nodes, job counts from
 * /jobs, partitions from /partitions joined with both, the scheduler from /diag. A family whose
 * source the API version does not carry (a diag field, effective CPUs before v0.0.40) is left
 * out, never reported as 0; counts over a list that was read are real zeros.
 */
import { point, type AttributesOf, type Family, type LazyFamily, type MetricSpec } from '../telemetry/spec.js';
import { expandHostlist } from './hostlist.js';
import {
  NATIVE_ACCOUNT_METRICS,
  NATIVE_JOB_METRICS,
  NATIVE_JOB_STATES,
  NATIVE_NODE_METRICS as N,
  NATIVE_NODE_SHARED_METRICS as NS,
  NATIVE_NODE_SHARED_OTLP_METRICS,
  NATIVE_NODE_STATES,
  NATIVE_PARTITION_METRICS as P,
  NATIVE_PARTITION_NODE_STATES,
  NATIVE_USER_METRICS,
  type NativeJobState,
} from './metrics.js';
import type { SlurmJob, SlurmNode, SlurmPartition } from './model.js';
import { JOB_TERMINAL_STATES } from './model.js';
import {
  hostsCache,
  NO_HOSTS,
  NO_HOSTS_OF,
  NodeBits,
  tresCache,
  type HostsOf,
  type TresOf,
} from './native-counting.js';
import { schedulerFamilies } from './native-scheduler.js';
import {
  arrayTaskCount,
  countStates,
  isHeld,
  jobStateNames,
  nodeStateNames,
  PARTITION_NAMES,
} from './native-states.js';
import type { ClusterSnapshot } from './snapshot.js';
import { nodesByName, uniqueJobs } from './state.js';
import { parseTres } from './tres.js';

type GaugeSpec<L extends string = string> = MetricSpec<L, never> & { kind: 'gauge' };
type NativeFamily = Family | LazyFamily;
const MIB = 1024 * 1024;

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
  const nodes = snap.nodes ? [...nodesByName(snap.nodes.value).values()] : undefined;
  const tres = tresCache();
  const hosts = hostsCache();
  // Expanding every running job's hostlist is the costliest step at 100k jobs: the whole
  // cluster's distinct nodes come from /nodes when it is there, job by job only per user/account.
  const expand = usersAccounts || nodes === undefined ? hosts : NO_HOSTS_OF;
  const jobs = snap.jobs ? uniqueJobs(snap.jobs.value).map((j) => jobView(j, expand)) : undefined;
  const busy = nodes === undefined ? undefined : nodes.filter(holdsJobs).length;
  const jobGroups = jobs ? jobFamilies(jobs, tres, usersAccounts, busy) : undefined;
  return {
    nodes: nodes ? nodeFamilies(nodes, tres) : [],
    nodesShared: nodes ? sharedNodeFamilies(nodes, NS) : [],
    nodesSharedOtlp: nodes ? sharedNodeFamilies(nodes, NATIVE_NODE_SHARED_OTLP_METRICS) : [],
    jobs: jobGroups?.all ?? [],
    usersAccounts: jobGroups?.usersAccounts ?? [],
    partitions: snap.partitions ? partitionFamilies(snap.partitions.value, nodes, jobs, tres) : [],
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

/** The one point of a family without labels. */
const gaugeOf = (spec: GaugeSpec<never>, value: number): Family => ({ spec, points: [point(spec, {}, value)] });

export { arrayTaskCount, jobStateNames, nodeStateNames } from './native-states.js';
export { schedulerValue } from './native-scheduler.js';

// ---- nodes ----

function perNode(
  spec: GaugeSpec<'node'>,
  nodes: readonly SlurmNode[],
  value: (n: SlurmNode) => number | undefined,
): LazyFamily {
  return {
    spec,
    lazy: {
      *[Symbol.iterator]() {
        for (const n of nodes) {
          const v = value(n);
          if (v !== undefined && Number.isFinite(v)) yield point(spec, { node: n.name }, v);
        }
      },
    },
  };
}

function nodeFamilies(nodes: readonly SlurmNode[], tres: TresOf): NativeFamily[] {
  const states = countStates(NATIVE_NODE_STATES, nodes.map(nodeStateNames));
  return [
    perNode(N.cpus, nodes, (n) => n.cpus),
    perNode(N.cpusAlloc, nodes, (n) => n.alloc_cpus),
    perNode(N.memory, nodes, (n) => n.real_memory),
    perNode(N.memoryAlloc, nodes, (n) => n.alloc_memory),
    perNode(N.gpus, nodes, (n) => nodeGpus(n, tres)),
    perNode(N.gpusAlloc, nodes, (n) => nodeGpusAlloc(n, tres)),
    gaugeOf(N.nodes, nodes.length),
    ...NATIVE_NODE_STATES.map((s) => gaugeOf(N.states[s], states[s])),
  ];
}

/** slurmctld's `/metrics/nodes` values of the four names `/metrics` also uses (MiB, its idle). */
function sharedNodeFamilies(nodes: readonly SlurmNode[], specs: typeof NS): NativeFamily[] {
  return [
    perNode(specs.cpusIdle, nodes, nodeCpusIdle),
    perNode(specs.cpusEffective, nodes, (n) => n.effective_cpus),
    // slurmctld reports 0 until slurmd has sent a figure.
    perNode(specs.memoryFree, nodes, (n) => n.free_mem ?? 0),
    perNode(specs.memoryEffective, nodes, nodeMemoryEffective),
  ];
}

/**
 * Effective CPUs minus allocated ones (not Slurm's idle count: a drained node's CPUs count too).
 * Before v0.0.40 slurmrestd has no effective count: the configured CPUs stand in.
 */
function nodeCpusIdle(n: SlurmNode): number | undefined {
  const effective = n.effective_cpus ?? n.cpus;
  return effective === undefined ? undefined : effective - (n.alloc_cpus ?? 0);
}

function nodeMemoryEffective(n: SlurmNode): number | undefined {
  return n.real_memory === undefined ? undefined : n.real_memory - (n.specialized_memory ?? 0);
}

/** A node without gres/gpu in its TRES has 0 GPUs, as slurmctld counts it. */
function nodeGpus(n: SlurmNode, tres: TresOf): number {
  return tres(n.tres).gpus ?? 0;
}

/** `gpu:tesla:1(IDX:0),gpu:a100:2(IDX:1-2)`: one count per GPU type, before its index list. */
const GRES_GPU = /(?:^|,)gpu(?::[^,(]*)?:(\d+)(?=\(|,|$)/g;

/** Allocated GPUs from the GRES in use (known without GPU TRES too); the used TRES otherwise. */
export function nodeGpusAlloc(n: Pick<SlurmNode, 'gres_used' | 'tres_used'>, tres: TresOf = parseTres): number {
  if (n.gres_used !== undefined && n.gres_used !== '') {
    let total = 0;
    for (const m of n.gres_used.matchAll(GRES_GPU)) total += Number(m[1]);
    return total;
  }
  return tres(n.tres_used).gpus ?? 0;
}

// ---- jobs ----

/**
 * A node holding a running or suspended job, as slurmctld's union of those jobs' nodes counts
 * it: slurmctld marks it allocated (mixed when partly), and idle again once its last job ended.
 */
function holdsJobs(n: SlurmNode): boolean {
  return n.state.base === 'ALLOCATED' || n.state.base === 'MIXED';
}

interface JobTotals {
  /** slurmctld's `jobs`: pending array tasks one each (whole cluster) or records (user, account). */
  jobs: number;
  states: Record<NativeJobState, number>;
  cpusAlloc: number;
  memoryAllocMiB: number;
  nodes: NodeBits;
  /** The distinct nodes when known otherwise (the whole cluster's, from /nodes). */
  nodesAlloc?: number;
  gpusAlloc: number;
}

const newTotals = (): JobTotals => ({
  jobs: 0,
  states: countStates(NATIVE_JOB_STATES, []),
  cpusAlloc: 0,
  memoryAllocMiB: 0,
  nodes: new NodeBits(),
  gpusAlloc: 0,
});

/** Running and suspended jobs hold their allocation; pending and finished ones hold none. */
function holdsAllocation(job: SlurmJob): boolean {
  const base = job.state[0];
  return base === 'RUNNING' || base === 'SUSPENDED';
}

/** One job record, as slurmctld adds it: pending and hold count each task of an array record. */
interface JobView {
  readonly job: SlurmJob;
  readonly names: readonly NativeJobState[];
  readonly tasks: number;
  /** Its nodes while it holds them (running, suspended). */
  readonly hosts: readonly number[];
}

function jobView(job: SlurmJob, hosts: HostsOf): JobView {
  const held = holdsAllocation(job);
  return { job, names: jobStateNames(job), tasks: arrayTaskCount(job), hosts: held ? hosts(job) : NO_HOSTS };
}

function addJob(t: JobTotals, v: JobView, jobsAdd: number, tres: TresOf): void {
  t.jobs += jobsAdd;
  for (const n of v.names) t.states[n] += n === 'pending' || n === 'hold' ? v.tasks : 1;
  if (!holdsAllocation(v.job)) return;
  const alloc = tres(v.job.tres_alloc_str);
  t.cpusAlloc += alloc.cpus ?? v.job.cpus ?? 0;
  t.memoryAllocMiB += (alloc.memory_bytes ?? 0) / MIB;
  for (const h of v.hosts) t.nodes.add(h);
  t.gpusAlloc += alloc.gpus ?? 0;
}

/** The job families of one grouping: the whole cluster (no label), per user or per account. */
interface JobSpecs<L extends string> {
  readonly jobs: GaugeSpec<L>;
  readonly states: Readonly<Record<NativeJobState, GaugeSpec<L>>>;
  readonly cpusAlloc: GaugeSpec<L>;
  readonly memoryAlloc: GaugeSpec<L>;
  readonly nodesAlloc: GaugeSpec<L>;
  readonly gpusAlloc: GaugeSpec<L>;
}

/**
 * `label` is the families' one key (none for the whole cluster): another name does not compile.
 * An empty key (a job without an account) leaves the label out, as slurmctld does.
 */
function totalsFamilies<L extends string>(
  specs: JobSpecs<L>,
  rows: ReadonlyMap<string, JobTotals>,
  label: NoInfer<L> | undefined,
): Family[] {
  // A computed key has type string to the compiler: the cast restores the label the caller was held to.
  const attrs = (k: string) => (label === undefined || k === '' ? {} : { [label]: k }) as AttributesOf<GaugeSpec<L>>;
  const fam = (spec: GaugeSpec<L>, value: (t: JobTotals) => number): Family => ({
    spec,
    points: [...rows].map(([k, t]) => point(spec, attrs(k), value(t))),
  });
  return [
    fam(specs.jobs, (t) => t.jobs),
    ...NATIVE_JOB_STATES.map((s) => fam(specs.states[s], (t) => t.states[s])),
    fam(specs.cpusAlloc, (t) => t.cpusAlloc),
    fam(specs.memoryAlloc, (t) => t.memoryAllocMiB),
    fam(specs.nodesAlloc, (t) => t.nodesAlloc ?? t.nodes.size),
    fam(specs.gpusAlloc, (t) => t.gpusAlloc),
  ];
}

function jobFamilies(
  jobs: readonly JobView[],
  tres: TresOf,
  usersAccounts: boolean,
  busyNodes: number | undefined,
): { all: Family[]; usersAccounts: Family[] } {
  const all = newTotals();
  const byUser = new Map<string, JobTotals>();
  const byAccount = new Map<string, JobTotals>();
  const group = (m: Map<string, JobTotals>, k: string): JobTotals =>
    m.get(k) ?? (m.set(k, newTotals()).get(k) as JobTotals);
  for (const v of jobs) {
    addJob(all, v, v.tasks, tres);
    if (!usersAccounts) continue;
    addJob(group(byUser, v.job.user_name ?? ''), v, 1, tres);
    addJob(group(byAccount, v.job.account ?? ''), v, 1, tres);
  }
  if (busyNodes !== undefined) all.nodesAlloc = busyNodes;
  return {
    all: totalsFamilies(NATIVE_JOB_METRICS, new Map([['', all]]), undefined),
    usersAccounts: !usersAccounts
      ? []
      : [
          ...totalsFamilies(NATIVE_USER_METRICS, byUser, 'username'),
          ...totalsFamilies(NATIVE_ACCOUNT_METRICS, byAccount, 'account'),
        ],
  };
}

// ---- partitions ----

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

function partitionFamilies(
  parts: readonly SlurmPartition[],
  nodes: readonly SlurmNode[] | undefined,
  jobs: readonly JobView[] | undefined,
  tres: TresOf,
): Family[] {
  const named = [...new Map(parts.map((p) => [p.name, p])).values()];
  const per = (spec: GaugeSpec<'partition'>, value: (p: SlurmPartition) => number | undefined): Family => ({
    spec,
    points: named.flatMap((p) => {
      const v = value(p);
      return v === undefined || !Number.isFinite(v) ? [] : [point(spec, { partition: p.name }, v)];
    }),
  });
  return [
    gaugeOf(P.partitions, named.length),
    per(P.cpus, (p) => p.total_cpus),
    ...(nodes ? partitionNodeFamilies(named, nodes, per, tres) : []),
    ...(jobs ? partitionJobFamilies(named, jobs, tres, per) : []),
  ];
}

type PerPartition = (spec: GaugeSpec<'partition'>, value: (p: SlurmPartition) => number | undefined) => Family;

function partitionNodeFamilies(
  parts: readonly SlurmPartition[],
  nodes: readonly SlurmNode[],
  per: PerPartition,
  tres: TresOf,
): Family[] {
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const members = new Map(parts.map((p) => [p.name, partitionNodes(p, byName, nodes)]));
  const of = (p: SlurmPartition): SlurmNode[] => members.get(p.name) ?? [];
  const rename = (n: string): string => PARTITION_NAMES[n] ?? n;
  const states = new Map(
    parts.map((p) => [p.name, countStates(NATIVE_PARTITION_NODE_STATES, of(p).map(nodeStateNames), rename)]),
  );
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
    per(P.nodes, (p) => p.total_nodes ?? of(p).length),
    ...NATIVE_PARTITION_NODE_STATES.map((s) => per(P.nodeStates[s], (p) => states.get(p.name)?.[s])),
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

/**
 * The one partition slurmctld counts a job in: the job's partition, or for a pending job
 * submitted to several (`cpu,gpu`) the last listed, where its scheduler leaves a job it has
 * tried in each.
 */
export function nativeJobPartition(job: Pick<SlurmJob, 'partition'>): string | undefined {
  const parts = (job.partition ?? '').split(',').filter((p) => p !== '');
  return parts[parts.length - 1];
}

/** Finished with nothing left completing: slurmctld leaves such a record out of a partition's `jobs`. */
function isCompleted(job: SlurmJob): boolean {
  return JOB_TERMINAL_STATES.has(job.state[0] ?? '') && !job.state.includes('COMPLETING');
}

function partitionJobFamilies(
  parts: readonly SlurmPartition[],
  jobs: readonly JobView[],
  tres: TresOf,
  per: PerPartition,
): Family[] {
  const totals = new Map(parts.map((p) => [p.name, newTotals()]));
  const pending = new Map(
    parts.map((p): [string, PendingNodes] => [
      p.name,
      { max: 0, min: 0, maxNohold: 0, minNohold: 0, waitNodeLimit: 0 },
    ]),
  );
  for (const v of jobs) {
    const job = v.job;
    const name = nativeJobPartition(job);
    const t = name === undefined ? undefined : totals.get(name);
    if (t === undefined) continue;
    addJob(t, v, isCompleted(job) ? 0 : 1, tres);
    if (job.state[0] === 'PENDING') addPending(pending.get(name as string) as PendingNodes, job, tres);
  }
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
 * their maximum ones (`max_job_nodes`); slurmrestd's node count of a pending job is its minimum,
 * which stands for both.
 */
function addPending(q: PendingNodes, job: SlurmJob, tres: TresOf): void {
  // slurmctld tests the reason with a bitwise AND (any reason with bit 2 set); only this one is meant.
  if (job.state_reason === 'PartitionNodeLimit') q.waitNodeLimit += 1;
  const n = job.node_count ?? tres(job.tres_req_str).nodes;
  if (n === undefined) return;
  q.max = Math.max(q.max, n);
  q.min = Math.max(q.min, n);
  if (isHeld(job)) return;
  q.maxNohold = Math.max(q.maxNohold, n);
  q.minNohold = Math.max(q.minNohold, n);
}
