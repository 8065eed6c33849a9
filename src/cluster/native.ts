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
  NATIVE_NODE_STATES,
  NATIVE_PARTITION_METRICS as P,
  NATIVE_PARTITION_NODE_STATES,
  NATIVE_SCHEDULER_METRICS as S,
  NATIVE_USER_METRICS,
  type NativeJobState,
  type NativeNodeState,
  type NativePartitionNodeState,
} from './metrics.js';
import type { NodeBaseState, SlurmDiag, SlurmJob, SlurmNode, SlurmPartition } from './model.js';
import { JOB_TERMINAL_STATES } from './model.js';
import type { ClusterSnapshot } from './snapshot.js';
import { nodesByName, uniqueJobs } from './state.js';
import { parseTres, type Tres } from './tres.js';

type GaugeSpec<L extends string = string> = MetricSpec<L, never> & { kind: 'gauge' };
const MIB = 1024 * 1024;

export interface NativeOptions {
  /** `/metrics/jobs-users-accts`: per-user and per-account job families. */
  readonly userAccountMetrics?: boolean;
}

export function nativeFamilies(snap: ClusterSnapshot, opts: NativeOptions = {}): Array<Family | LazyFamily> {
  const nodes = snap.nodes ? [...nodesByName(snap.nodes.value).values()] : undefined;
  const jobs = snap.jobs ? uniqueJobs(snap.jobs.value) : undefined;
  const tres = tresCache();
  return [
    ...(nodes ? nodeFamilies(nodes, tres) : []),
    ...(jobs ? jobFamilies(jobs, tres, opts) : []),
    ...(snap.partitions ? partitionFamilies(snap.partitions.value, nodes, jobs, tres) : []),
    ...(snap.diag ? schedulerFamilies(snap.diag.value) : []),
  ];
}

/** The one point of a family without labels. */
const gaugeOf = (spec: GaugeSpec<never>, value: number): Family => ({ spec, points: [point(spec, {}, value)] });

// ---- node states ----

const BASE_NAMES: Readonly<Partial<Record<NodeBaseState, NativeNodeState>>> = {
  ALLOCATED: 'alloc',
  DOWN: 'down',
  IDLE: 'idle',
  MIXED: 'mixed',
  FUTURE: 'future',
  UNKNOWN: 'unknown',
};

/** Flag words as slurmrestd sends them → the state names slurmctld counts under. */
const FLAG_NAMES: Readonly<Record<string, NativeNodeState | 'powering_down'>> = {
  BLOCKED: 'blocked',
  COMPLETING: 'completing',
  CLOUD: 'cloud',
  DRAIN: 'drain',
  DYNAMIC_FUTURE: 'dyn_future',
  DYNAMIC_NORM: 'dyn_normal',
  EXTERNAL: 'external',
  FAIL: 'fail',
  INVALID_REG: 'invalid_reg',
  MAINTENANCE: 'maint',
  NOT_RESPONDING: 'noresp',
  PLANNED: 'planned',
  POWER_DOWN: 'power_down',
  POWER_UP: 'power_up',
  POWERED_DOWN: 'powered_down',
  POWERING_UP: 'powering_up',
  POWERING_DOWN: 'powering_down',
  REBOOT_ISSUED: 'reboot_issued',
  REBOOT_REQUESTED: 'reboot_req',
  RESERVED: 'resv',
};

/** Where the partition list spells a state differently. */
const PARTITION_NAMES: Readonly<Partial<Record<string, NativePartitionNodeState>>> = {
  completing: 'cg',
  noresp: 'no_resp',
  reboot_req: 'reboot_requested',
};

/**
 * Every state name a node counts under: its base state, each flag, and drained/draining as
 * slurmctld tells them apart (DRAIN with jobs still on the node, i.e. allocated, mixed or
 * completing, is draining; DRAIN otherwise is drained).
 */
export function nodeStateNames(node: Pick<SlurmNode, 'state'>): string[] {
  const out: string[] = [];
  const base = BASE_NAMES[node.state.base];
  if (base !== undefined) out.push(base);
  for (const f of node.state.flags) {
    const name = FLAG_NAMES[f];
    if (name !== undefined && !out.includes(name)) out.push(name);
  }
  if (out.includes('drain')) {
    const busy = node.state.base === 'ALLOCATED' || node.state.base === 'MIXED' || out.includes('completing');
    out.push(busy ? 'draining' : 'drained');
  }
  return out;
}

function countStates<K extends string>(
  keys: readonly K[],
  names: Iterable<readonly string[]>,
  rename: (n: string) => string = (n) => n,
): Record<K, number> {
  const counts = Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
  for (const list of names)
    for (const n of list) {
      const k = rename(n) as K;
      if (k in counts) counts[k] += 1;
    }
  return counts;
}

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

function nodeFamilies(nodes: readonly SlurmNode[], tres: TresOf): Array<Family | LazyFamily> {
  const mib = (v: number | undefined): number | undefined => (v === undefined ? undefined : v * MIB);
  const states = countStates(NATIVE_NODE_STATES, nodes.map(nodeStateNames));
  return [
    perNode(N.cpus, nodes, (n) => n.cpus),
    perNode(N.cpusAlloc, nodes, (n) => n.alloc_cpus),
    perNode(N.memory, nodes, (n) => mib(n.real_memory)),
    perNode(N.memoryAlloc, nodes, (n) => mib(n.alloc_memory)),
    perNode(N.gpus, nodes, (n) => tres(n.tres).gpus),
    // An idle node has no used TRES at all (null): none of its GPUs is allocated.
    perNode(N.gpusAlloc, nodes, (n) => (tres(n.tres).gpus === undefined ? undefined : (tres(n.tres_used).gpus ?? 0))),
    gaugeOf(N.nodes, nodes.length),
    ...NATIVE_NODE_STATES.map((s) => gaugeOf(N.states[s], states[s])),
  ];
}

// ---- jobs ----

const JOB_BASE_NAMES: Readonly<Record<string, NativeJobState>> = {
  PENDING: 'pending',
  RUNNING: 'running',
  SUSPENDED: 'suspended',
  COMPLETED: 'completed',
  CANCELLED: 'cancelled',
  FAILED: 'failed',
  TIMEOUT: 'timeout',
  NODE_FAIL: 'node_failed',
  PREEMPTED: 'preempted',
  BOOT_FAIL: 'bootfail',
  DEADLINE: 'deadline',
  OUT_OF_MEMORY: 'outofmemory',
};
const JOB_FLAG_NAMES: Readonly<Record<string, NativeJobState>> = {
  COMPLETING: 'completing',
  CONFIGURING: 'configuring',
  EXPEDITING: 'expediting',
  REQUEUE_FED: 'fed_requeued',
  POWER_UP_NODE: 'powerup_node',
  REQUEUED: 'requeued',
  RESIZING: 'resizing',
  REVOKED: 'revoked',
  SIGNALING: 'signaling',
  STAGE_OUT: 'stageout',
};
const HELD_REASONS: ReadonlySet<string> = new Set(['JobHeldUser', 'JobHeldAdmin']);

function isHeld(job: SlurmJob): boolean {
  return job.state[0] === 'PENDING' && (HELD_REASONS.has(job.state_reason ?? '') || job.state.includes('REQUEUE_HOLD'));
}

/** The state names a job counts under: base, flags, started (not pending), finished (terminal), hold. */
export function jobStateNames(job: SlurmJob): NativeJobState[] {
  const base = job.state[0] ?? '';
  const out: NativeJobState[] = [];
  const b = JOB_BASE_NAMES[base];
  if (b !== undefined) out.push(b);
  for (const w of job.state.slice(1)) {
    const f = JOB_FLAG_NAMES[w];
    if (f !== undefined && !out.includes(f)) out.push(f);
  }
  if (b !== undefined && base !== 'PENDING') out.push('started');
  if (JOB_TERMINAL_STATES.has(base)) out.push('finished');
  if (isHeld(job)) out.push('hold');
  return out;
}

type TresOf = (s: string | undefined) => Tres;

/** TRES strings repeat across jobs and nodes (a few shapes): each distinct one is parsed once per render. */
function tresCache(): TresOf {
  const cache = new Map<string, Tres>();
  return (s) => {
    const key = s ?? '';
    let t = cache.get(key);
    if (t === undefined) cache.set(key, (t = parseTres(s)));
    return t;
  };
}

interface JobTotals {
  jobs: number;
  states: Record<NativeJobState, number>;
  cpusAlloc: number;
  memoryAllocMiB: number;
  nodesAlloc: number;
  gpusAlloc: number;
}

const newTotals = (): JobTotals => ({
  jobs: 0,
  states: countStates(NATIVE_JOB_STATES, []),
  cpusAlloc: 0,
  memoryAllocMiB: 0,
  nodesAlloc: 0,
  gpusAlloc: 0,
});

/** Running and suspended jobs hold their allocation; pending and finished ones hold none. */
function holdsAllocation(job: SlurmJob): boolean {
  const base = job.state[0];
  return base === 'RUNNING' || base === 'SUSPENDED';
}

function addJob(t: JobTotals, job: SlurmJob, names: readonly NativeJobState[], tres: TresOf): void {
  t.jobs += 1;
  for (const n of names) t.states[n] += 1;
  if (!holdsAllocation(job)) return;
  const alloc = tres(job.tres_alloc_str);
  t.cpusAlloc += alloc.cpus ?? job.cpus ?? 0;
  t.memoryAllocMiB += (alloc.memory_bytes ?? 0) / MIB;
  t.nodesAlloc += alloc.nodes ?? job.node_count ?? 0;
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

/** `label` is the families' one key (none for the whole cluster): another name does not compile. */
function totalsFamilies<L extends string>(
  specs: JobSpecs<L>,
  rows: ReadonlyMap<string, JobTotals>,
  label: NoInfer<L> | undefined,
): Family[] {
  // A computed key has type string to the compiler: the cast restores the label the caller was held to.
  const attrs = (k: string) => (label === undefined ? {} : { [label]: k }) as AttributesOf<GaugeSpec<L>>;
  const fam = (spec: GaugeSpec<L>, value: (t: JobTotals) => number): Family => ({
    spec,
    points: [...rows].map(([k, t]) => point(spec, attrs(k), value(t))),
  });
  return [
    fam(specs.jobs, (t) => t.jobs),
    ...NATIVE_JOB_STATES.map((s) => fam(specs.states[s], (t) => t.states[s])),
    fam(specs.cpusAlloc, (t) => t.cpusAlloc),
    fam(specs.memoryAlloc, (t) => t.memoryAllocMiB),
    fam(specs.nodesAlloc, (t) => t.nodesAlloc),
    fam(specs.gpusAlloc, (t) => t.gpusAlloc),
  ];
}

function jobFamilies(jobs: readonly SlurmJob[], tres: TresOf, opts: NativeOptions): Family[] {
  const all = newTotals();
  const byUser = new Map<string, JobTotals>();
  const byAccount = new Map<string, JobTotals>();
  const group = (m: Map<string, JobTotals>, k: string): JobTotals =>
    m.get(k) ?? (m.set(k, newTotals()).get(k) as JobTotals);
  for (const job of jobs) {
    const names = jobStateNames(job);
    addJob(all, job, names, tres);
    if (!opts.userAccountMetrics) continue;
    addJob(group(byUser, job.user_name ?? ''), job, names, tres);
    addJob(group(byAccount, job.account ?? ''), job, names, tres);
  }
  return [
    ...totalsFamilies(NATIVE_JOB_METRICS, new Map([['', all]]), undefined),
    ...(opts.userAccountMetrics
      ? [
          ...totalsFamilies(NATIVE_USER_METRICS, byUser, 'username'),
          ...totalsFamilies(NATIVE_ACCOUNT_METRICS, byAccount, 'account'),
        ]
      : []),
  ];
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

interface PendingNodes {
  max?: number;
  min?: number;
  maxNohold?: number;
  minNohold?: number;
  waitNodeLimit: number;
}

function partitionFamilies(
  parts: readonly SlurmPartition[],
  nodes: readonly SlurmNode[] | undefined,
  jobs: readonly SlurmJob[] | undefined,
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
    per(P.gpus, (p) => parseTres(p.tres).gpus),
    ...(nodes ? partitionNodeFamilies(named, nodes, per) : []),
    ...(jobs ? partitionJobFamilies(named, jobs, tres, per) : []),
  ];
}

type PerPartition = (spec: GaugeSpec<'partition'>, value: (p: SlurmPartition) => number | undefined) => Family;

function partitionNodeFamilies(
  parts: readonly SlurmPartition[],
  nodes: readonly SlurmNode[],
  per: PerPartition,
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
    per(
      P.cpusIdle,
      sum((n) => n.alloc_idle_cpus),
    ),
    per(
      P.cpusEffective,
      sum((n) => n.effective_cpus),
    ),
    per(
      P.memAlloc,
      sum((n) => n.alloc_memory),
    ),
    per(
      P.memAvail,
      sum((n) => (n.real_memory === undefined ? undefined : n.real_memory - (n.alloc_memory ?? 0))),
    ),
    per(
      P.memFree,
      sum((n) => n.free_mem),
    ),
    per(
      P.memTotal,
      sum((n) => n.real_memory),
    ),
  ];
}

/** `gpu,cpu` (a job submitted to several partitions) counts in each. */
function jobPartitions(job: SlurmJob): string[] {
  return (job.partition ?? '').split(',').filter((p) => p !== '');
}

function partitionJobFamilies(
  parts: readonly SlurmPartition[],
  jobs: readonly SlurmJob[],
  tres: TresOf,
  per: PerPartition,
): Family[] {
  const totals = new Map(parts.map((p) => [p.name, newTotals()]));
  const pending = new Map(parts.map((p): [string, PendingNodes] => [p.name, { waitNodeLimit: 0 }]));
  for (const job of jobs) {
    const names = jobStateNames(job);
    for (const name of jobPartitions(job)) {
      const t = totals.get(name);
      if (t === undefined) continue;
      addJob(t, job, names, tres);
      if (job.state[0] === 'PENDING') addPending(pending.get(name) as PendingNodes, job, tres);
    }
  }
  const t = (p: SlurmPartition): JobTotals => totals.get(p.name) as JobTotals;
  const q = (p: SlurmPartition): PendingNodes => pending.get(p.name) as PendingNodes;
  return [
    per(P.jobs, (p) => t(p).jobs),
    ...NATIVE_JOB_STATES.map((s) => per(P.jobStates[s], (p) => t(p).states[s])),
    per(P.jobsCpusAlloc, (p) => t(p).cpusAlloc),
    per(P.jobsMemoryAlloc, (p) => t(p).memoryAllocMiB),
    per(P.jobsMaxNodes, (p) => q(p).max ?? 0),
    per(P.jobsMaxNodesNohold, (p) => q(p).maxNohold ?? 0),
    per(P.jobsMinNodes, (p) => q(p).min ?? 0),
    per(P.jobsMinNodesNohold, (p) => q(p).minNohold ?? 0),
    per(P.jobsWaitNodeLimit, (p) => q(p).waitNodeLimit),
  ];
}

function addPending(q: PendingNodes, job: SlurmJob, tres: TresOf): void {
  if (job.state_reason === 'PartitionNodeLimit') q.waitNodeLimit += 1;
  const n = job.node_count ?? tres(job.tres_req_str).nodes;
  if (n === undefined) return;
  q.max = Math.max(q.max ?? n, n);
  q.min = Math.min(q.min ?? n, n);
  if (isHeld(job)) return;
  q.maxNohold = Math.max(q.maxNohold ?? n, n);
  q.minNohold = Math.min(q.minNohold ?? n, n);
}

// ---- scheduler ----

type SchedulerKey = keyof typeof S;
type DiagNumber = { [K in keyof SlurmDiag]-?: SlurmDiag[K] extends number | undefined ? K : never }[keyof SlurmDiag];

/** Each scheduler family's source in /diag: a field, or a reason of `schedule_exit` / `bf_exit`. */
const SCHEDULER_SOURCES: Readonly<
  Record<SchedulerKey, DiagNumber | ['schedule_exit' | 'bf_exit', string] | 'bf_active'>
> = {
  agentCnt: 'agent_count',
  agentQueueSize: 'agent_queue_size',
  agentThreadCnt: 'agent_thread_count',
  serverThreadCnt: 'server_thread_count',
  dbdQueueSize: 'dbd_agent_queue_size',
  lastProcReqStart: 'req_time_start',
  statsTimestamp: 'req_time',
  cycleCnt: 'schedule_cycle_total',
  cycleDepth: 'schedule_cycle_depth',
  cycleLast: 'schedule_cycle_last',
  cycleMax: 'schedule_cycle_max',
  cycleTot: 'schedule_cycle_sum',
  queueLen: 'schedule_queue_length',
  meanCycle: 'schedule_cycle_mean',
  meanDepthCycle: 'schedule_cycle_mean_depth',
  exitEnd: ['schedule_exit', 'end_job_queue'],
  exitMaxDepth: ['schedule_exit', 'default_queue_depth'],
  exitMaxJobStart: ['schedule_exit', 'max_job_start'],
  exitLic: ['schedule_exit', 'licenses'],
  exitRpcCnt: ['schedule_exit', 'max_rpc_cnt'],
  exitTimeout: ['schedule_exit', 'max_sched_time'],
  bfActive: 'bf_active',
  bfCycleCnt: 'bf_cycle_counter',
  bfCycleLast: 'bf_cycle_last',
  bfCycleMax: 'bf_cycle_max',
  bfCycleTot: 'bf_cycle_sum',
  bfDepthMean: 'bf_depth_mean',
  bfDepthTot: 'bf_depth_sum',
  bfDepthTryTot: 'bf_depth_try_sum',
  bfTryDepthMean: 'bf_depth_mean_try',
  bfLastDepth: 'bf_last_depth',
  bfLastDepthTry: 'bf_last_depth_try',
  bfMeanCycle: 'bf_cycle_mean',
  bfMeanTableSz: 'bf_table_size_mean',
  bfQueueLen: 'bf_queue_len',
  bfQueueLenMean: 'bf_queue_len_mean',
  bfQueueLenTot: 'bf_queue_len_sum',
  bfTableSize: 'bf_table_size',
  bfTableSizeTot: 'bf_table_size_sum',
  bfWhenLastCycle: 'bf_when_last_cycle',
  bfExitEnd: ['bf_exit', 'end_job_queue'],
  bfExitMaxJobStart: ['bf_exit', 'bf_max_job_start'],
  bfExitMaxJobTest: ['bf_exit', 'bf_max_job_test'],
  bfExitStateChanged: ['bf_exit', 'state_changed'],
  bfExitTableLimit: ['bf_exit', 'bf_node_space_size'],
  bfExitTimeout: ['bf_exit', 'bf_max_time'],
  backfilledJobs: 'bf_backfilled_jobs',
  backfilledHetJobs: 'bf_backfilled_het_jobs',
  lastBackfilledJobs: 'bf_last_backfilled_jobs',
  jobsCanceled: 'jobs_canceled',
  jobsCompleted: 'jobs_completed',
  jobsFailed: 'jobs_failed',
  jobsPending: 'jobs_pending',
  jobsRunning: 'jobs_running',
  jobsStarted: 'jobs_started',
  jobsSubmitted: 'jobs_submitted',
  jobStatesTs: 'job_states_ts',
  latency: 'gettimeofday_latency',
};

export function schedulerValue(diag: SlurmDiag, key: SchedulerKey): number | undefined {
  const src = SCHEDULER_SOURCES[key];
  if (src === 'bf_active') return diag.bf_active === undefined ? undefined : Number(diag.bf_active);
  if (Array.isArray(src)) return diag[src[0]]?.[src[1]];
  return diag[src];
}

function schedulerFamilies(diag: SlurmDiag): Family[] {
  const out: Family[] = [];
  for (const key of Object.keys(S) as SchedulerKey[]) {
    const v = schedulerValue(diag, key);
    if (v !== undefined && Number.isFinite(v)) out.push(gaugeOf(S[key], v));
  }
  return out;
}
