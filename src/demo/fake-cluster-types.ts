/**
 * The plain state of the fake Slurm cluster, in version-free terms, and the Slurm strings derived
 * from it (state words, TRES, GRES, hostlists). The simulation (fake-cluster.ts) produces these
 * records, the renderer (slurm-render*.ts) turns them into wire shapes, and the tests' truth accessors
 * turn them into the model the decoders produce: all three read the same derivations, so a test
 * comparing decoded output with the truth checks the wire shapes, not two copies of the rules.
 *
 * Records are immutable: the simulation replaces a record when it changes, so a renderer that
 * captured the record arrays keeps a consistent snapshot while the cluster moves on (slurmctld
 * packs its answer under a lock; a streamed body must not mix two moments either).
 */
import type { NodeBaseState, NodeState } from '../cluster/model.js';

export interface FakeUser {
  readonly name: string;
  readonly uid: number;
  readonly account: string;
}

export interface FakeNode {
  readonly index: number;
  readonly name: string;
  readonly address: string;
  readonly partition: string;
  readonly sockets: number;
  readonly coresPerSocket: number;
  readonly threadsPerCore: number;
  readonly cpus: number;
  /** MiB. */
  readonly realMemoryMiB: number;
  /** Configured GPUs (`gres/gpu=N` in the node's `tres`); 0 on CPU nodes. */
  readonly gpus: number;
  readonly gpuType: string;
  readonly features: readonly string[];
  readonly allocCpus: number;
  readonly allocMemoryMiB: number;
  readonly allocGpus: number;
  readonly drain: boolean;
  /** Unix seconds since slurmd stopped answering; 0 while it answers. */
  readonly notRespondingSince: number;
  /** Unix seconds at which a DOWN node comes back; 0 when the node is not DOWN. */
  readonly downUntil: number;
  readonly reason: string;
  readonly reasonSetBy: string;
  readonly reasonChangedAt: number;
  readonly bootTime: number;
  readonly slurmdStartTime: number;
  readonly lastBusy: number;
  /** Load × 100, as slurmd reports it. */
  readonly cpuLoad: number;
  /** MiB. */
  readonly freeMemMiB: number;
}

export type FakeJobState = 'PENDING' | 'RUNNING' | 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'TIMEOUT';
export type FakeOutcome = Exclude<FakeJobState, 'PENDING' | 'RUNNING'>;

/**
 * Array identity. A running task has `taskId`; the pending master record has `pendingTasks`
 * (what Slurm prints as `array_task_string`, e.g. `4-7%4`).
 */
export interface FakeArray {
  readonly jobId: number;
  readonly maxRunning: number;
  readonly taskId?: number;
  readonly pendingTasks?: readonly number[];
}

export interface FakeJob {
  readonly id: number;
  readonly name: string;
  readonly user: FakeUser;
  readonly partition: string;
  readonly state: FakeJobState;
  readonly reason: string;
  readonly submitTime: number;
  readonly eligibleTime: number;
  /** 0 until the job starts. */
  readonly startTime: number;
  /** 0 while pending; Slurm's forecast (start + limit) while running; the real end afterwards. */
  readonly endTime: number;
  /** Minutes, or UNLIMITED (`--time=UNLIMITED`). */
  readonly timeLimitMin: number | 'UNLIMITED';
  readonly nodeCount: number;
  readonly cpusPerNode: number;
  readonly memPerNodeMiB: number;
  readonly gpusPerNode: number;
  readonly nodeIdx: readonly number[];
  /** Compressed hostlist of `nodeIdx`; '' when no node is assigned. */
  readonly nodeList: string;
  /** How long the job runs once started (Infinity: until cancelled, which never happens). */
  readonly runSeconds: number;
  readonly outcome: FakeOutcome;
  /** Process exit status for FAILED jobs. */
  readonly exitStatus: number;
  readonly array?: FakeArray;
  readonly restartCnt: number;
  /** Allocated TRES string; '' until first allocation, kept across a requeue as Slurm does. */
  readonly allocTres: string;
  readonly priority: number;
}

export interface RpcTypeCounter {
  readonly type: string;
  readonly typeId: number;
  readonly count: number;
  /** Microseconds. */
  readonly totalUs: number;
}

export interface RpcUserCounter {
  readonly user: string;
  readonly uid: number;
  readonly count: number;
  readonly totalUs: number;
}

/** Controller statistics (what sdiag shows). Cumulative counters never decrease. */
export interface FakeDiag {
  readonly reqTimeStart: number;
  readonly serverThreadCount: number;
  readonly agentQueueSize: number;
  readonly agentCount: number;
  readonly agentThreadCount: number;
  readonly dbdAgentQueueSize: number;
  readonly jobsSubmitted: number;
  readonly jobsStarted: number;
  readonly jobsCompleted: number;
  readonly jobsCanceled: number;
  readonly jobsFailed: number;
  readonly jobsPending: number;
  readonly jobsRunning: number;
  readonly jobStatesTs: number;
  readonly scheduleCycleMax: number;
  readonly scheduleCycleLast: number;
  /** 64-bit in slurmctld; API versions before v0.0.44 carry it as uint32 (wrapped). */
  readonly scheduleCycleSum: number;
  readonly scheduleCycleTotal: number;
  readonly scheduleCycleDepth: number;
  readonly scheduleQueueLength: number;
  readonly bfBackfilledJobs: number;
  readonly bfCycleCounter: number;
  readonly bfCycleSum: number;
  readonly bfCycleLast: number;
  readonly bfCycleMax: number;
  readonly bfDepthSum: number;
  readonly bfQueueLen: number;
  readonly bfQueueLenSum: number;
  readonly bfWhenLastCycle: number;
  readonly rpcsByType: readonly RpcTypeCounter[];
  readonly rpcsByUser: readonly RpcUserCounter[];
}

/** A TRES count as slurmdbd lists it (`gres/gpu=8` is type gres, name gpu); memory in MiB. */
export interface FakeTres {
  readonly type: string;
  readonly name: string;
  readonly id: number;
  readonly count: number;
}

/**
 * A QoS as sacctmgr sets it. A limit left out is not set (slurmdbd reads it back as INFINITE);
 * wall clock limits are in minutes, as slurmdbd stores them.
 */
export interface FakeQos {
  readonly id: number;
  readonly name: string;
  readonly description: string;
  readonly flags: readonly string[];
  readonly priority: number;
  readonly usageFactor: number;
  /** GrpJobs, GrpSubmitJobs. */
  readonly grpJobs?: number;
  readonly grpSubmitJobs?: number;
  /** MaxJobsPerUser, MaxJobsPerAccount. */
  readonly maxJobsPerUser?: number;
  readonly maxJobsPerAccount?: number;
  /** MaxSubmitJobsPerUser, MaxSubmitJobsPerAccount. */
  readonly maxSubmitJobsPerUser?: number;
  readonly maxSubmitJobsPerAccount?: number;
  /** MaxWall (per job) and GrpWall, minutes. */
  readonly maxWallMinutes?: number;
  readonly grpWallMinutes?: number;
  readonly grpTres: readonly FakeTres[];
  readonly maxTresPerJob: readonly FakeTres[];
  readonly maxTresPerNode: readonly FakeTres[];
  readonly maxTresPerUser: readonly FakeTres[];
  readonly maxTresPerAccount: readonly FakeTres[];
  /** GrpTRESMins, MaxTRESMinsPerJob. */
  readonly grpTresMinutes: readonly FakeTres[];
  readonly maxTresMinutesPerJob: readonly FakeTres[];
}

/**
 * An association: an account's own (user ''), or a user's in an account, on every partition
 * (partition '') or on one. Limits as in FakeQos.
 */
export interface FakeAssociation {
  readonly id: number;
  readonly account: string;
  readonly user: string;
  readonly partition: string;
  /** The parent account of an account's association; '' for root and for users' ones. */
  readonly parent: string;
  readonly shares: number;
  readonly qos: readonly string[];
  readonly defaultQos: string;
  readonly isDefault: boolean;
  readonly priority?: number;
  /** MaxJobs, MaxSubmitJobs, MaxWall (minutes). */
  readonly maxJobs?: number;
  readonly maxSubmitJobs?: number;
  readonly maxWallMinutes?: number;
  /** GrpJobs, GrpSubmitJobs. */
  readonly grpJobs?: number;
  readonly grpSubmitJobs?: number;
  readonly grpTres: readonly FakeTres[];
  readonly grpTresMinutes: readonly FakeTres[];
  readonly maxTresPerJob: readonly FakeTres[];
  readonly maxTresPerNode: readonly FakeTres[];
}

/** One consistent moment of the cluster, as a renderer or a truth accessor sees it. */
export interface ClusterView {
  readonly clusterName: string;
  /** Unix seconds. */
  readonly now: number;
  readonly nodes: readonly FakeNode[];
  /** What slurmctld holds: live jobs plus finished ones younger than MinJobAge. */
  readonly jobs: readonly FakeJob[];
  /** What slurmdbd holds: every job, finished ones included. */
  readonly accounting: readonly FakeJob[];
  readonly diag: FakeDiag;
  /** What slurmdbd holds of QoS and associations (sacctmgr's settings; they do not change). */
  readonly qos: readonly FakeQos[];
  readonly associations: readonly FakeAssociation[];
  readonly nodesUpdatedAt: number;
  readonly jobsUpdatedAt: number;
}

// ------------------------------------------------------------------ derived Slurm words

/** Base state and flags, as the model holds them (base first, flags in Slurm's order). */
export function nodeStateOf(n: FakeNode): NodeState {
  const base: NodeBaseState =
    n.downUntil > 0 ? 'DOWN' : n.allocCpus === 0 ? 'IDLE' : n.allocCpus >= n.cpus ? 'ALLOCATED' : 'MIXED';
  const flags: string[] = [];
  if (n.drain) flags.push('DRAIN');
  if (n.notRespondingSince > 0) flags.push('NOT_RESPONDING');
  return { base, flags };
}

export function isTerminal(j: FakeJob): boolean {
  return j.state !== 'PENDING' && j.state !== 'RUNNING';
}

export function jobCpus(j: FakeJob): number {
  return j.cpusPerNode * j.nodeCount;
}

/** Memory as Slurm prints it in TRES strings: the largest unit that divides evenly. */
export function tresMemory(mib: number): string {
  if (mib > 0 && mib % (1024 * 1024) === 0) return `${mib / (1024 * 1024)}T`;
  if (mib > 0 && mib % 1024 === 0) return `${mib / 1024}G`;
  return `${mib}M`;
}

function jobTres(j: FakeJob, typedGpu: string | undefined): string {
  const cpus = jobCpus(j);
  const gpus = j.gpusPerNode * j.nodeCount;
  let s = `cpu=${cpus},mem=${tresMemory(j.memPerNodeMiB * j.nodeCount)},node=${j.nodeCount},billing=${cpus}`;
  if (gpus > 0) s += `,gres/gpu=${gpus}`;
  if (gpus > 0 && typedGpu !== undefined) s += `,gres/gpu:${typedGpu}=${gpus}`;
  return s;
}

export function jobReqTres(j: FakeJob): string {
  return jobTres(j, undefined);
}

/** Allocated TRES also lists the typed GPU count, as slurmctld does once GPUs are bound. */
export function jobAllocTres(j: FakeJob, gpuType: string): string {
  return jobTres(j, gpuType);
}

export function nodeTres(n: FakeNode): string {
  const gpus = n.gpus > 0 ? `,gres/gpu=${n.gpus}` : '';
  return `cpu=${n.cpus},mem=${n.realMemoryMiB}M,billing=${n.cpus}${gpus}`;
}

/** '' when nothing is allocated: Slurm sends null or "" for an idle node. */
export function nodeTresUsed(n: FakeNode): string {
  if (n.allocCpus === 0) return '';
  const gpus = n.allocGpus > 0 ? `,gres/gpu=${n.allocGpus},gres/gpu:${n.gpuType}=${n.allocGpus}` : '';
  return `cpu=${n.allocCpus},mem=${tresMemory(n.allocMemoryMiB)}${gpus}`;
}

export function nodeGres(n: FakeNode): string {
  return n.gpus > 0 ? `gpu:${n.gpuType}:${n.gpus}(S:0-${n.sockets - 1})` : '';
}

export function nodeGresUsed(n: FakeNode): string {
  if (n.gpus === 0) return '';
  const idx = n.allocGpus > 0 ? `0-${n.allocGpus - 1}` : 'N/A';
  return `gpu:${n.gpuType}:${n.allocGpus}(IDX:${idx})`;
}

/** Ranges of sorted task ids: [4,5,6,7,9] → `4-7,9`. */
export function taskRanges(tasks: readonly number[]): string {
  const parts: string[] = [];
  let i = 0;
  while (i < tasks.length) {
    const lo = tasks[i] as number;
    let hi = lo;
    while (i + 1 < tasks.length && tasks[i + 1] === hi + 1) hi = tasks[++i] as number;
    parts.push(lo === hi ? String(lo) : `${lo}-${hi}`);
    i++;
  }
  return parts.join(',');
}

/** `array_task_string` of a pending master record (`4-7%4`); '' for anything else. */
export function arrayTaskString(j: FakeJob): string {
  const pending = j.array?.pendingTasks;
  if (pending === undefined || pending.length === 0) return '';
  const limit = j.array !== undefined && j.array.maxRunning > 0 ? `%${j.array.maxRunning}` : '';
  return `${taskRanges(pending)}${limit}`;
}

/**
 * Compresses node names into a Slurm hostlist (`gpu-[001-003],cpu-007`). Names that end in a
 * number are grouped by prefix and digit width, keeping zero padding.
 */
export function compressHostlist(names: readonly string[]): string {
  const groups = new Map<string, number[]>();
  const plain: string[] = [];
  for (const name of names) {
    const m = /^(.*?)(\d+)$/.exec(name);
    if (m === null) {
      plain.push(name);
      continue;
    }
    const key = `${m[1] as string}\u0000${(m[2] as string).length}`;
    const list = groups.get(key) ?? [];
    list.push(Number(m[2]));
    groups.set(key, list);
  }
  const out: string[] = [];
  for (const [key, nums] of groups) {
    const [prefix, widthText] = key.split('\u0000') as [string, string];
    const width = Number(widthText);
    const sorted = [...new Set(nums)].sort((a, b) => a - b);
    const ranges = taskRanges(sorted).replace(/\d+/g, (d) => d.padStart(width, '0'));
    out.push(sorted.length === 1 ? `${prefix}${ranges}` : `${prefix}[${ranges}]`);
  }
  return [...out, ...plain].join(',');
}
