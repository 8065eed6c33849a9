/**
 * The fake slurmctld's statistics (what sdiag shows): RPCs by message type and by user, job
 * totals, main and backfill scheduler cycles. Cumulative counters only grow; thread counts and
 * queue sizes wander from tick to tick.
 */
import type { FakeDiag, FakeUser, RpcTypeCounter, RpcUserCounter } from './fake-cluster-types.js';
import type { Prng } from './prng.js';

/** Slurm's default_queue_depth: the main scheduler tests this many pending jobs per cycle. */
export const QUEUE_DEPTH = 100;
const BACKFILL_EVERY_TICKS = 3;

const RPC_TYPES: readonly (readonly [string, number, number])[] = [
  ['REQUEST_NODE_INFO', 2007, 2500],
  ['REQUEST_JOB_INFO', 2003, 4000],
  ['REQUEST_PARTITION_INFO', 2009, 300],
  ['REQUEST_STATS_INFO', 2035, 150],
  ['REQUEST_SUBMIT_BATCH_JOB', 4003, 1500],
  ['MESSAGE_NODE_REGISTRATION_STATUS', 1002, 200],
  ['REQUEST_COMPLETE_BATCH_SCRIPT', 5018, 600],
  ['MESSAGE_EPILOG_COMPLETE', 6012, 150],
  ['REQUEST_PING', 1008, 100],
];

interface Row {
  readonly key: string;
  readonly id: number;
  count: number;
  totalUs: number;
}

type Counters = { -readonly [K in keyof FakeDiag]: FakeDiag[K] };

/** What one tick of the simulation did, as the scheduler statistics count it. */
export interface TickActivity {
  readonly tested: number;
  readonly backfilled: number;
  readonly pending: number;
  readonly running: number;
}

export class ControllerStats {
  private readonly types: Row[] = RPC_TYPES.map(([key, id]) => ({ key, id, count: 0, totalUs: 0 }));
  private readonly avgUs = new Map(RPC_TYPES.map(([key, , avg]) => [key, avg]));
  private readonly users: Row[];
  private readonly c: Counters;
  private ticks = 0;

  constructor(
    private readonly rng: Prng,
    private readonly jobUsers: readonly FakeUser[],
    t0: number,
  ) {
    this.users = [
      { key: 'root', id: 0 },
      { key: 'slurm', id: 64030 },
      ...jobUsers.map((u) => ({ key: u.name, id: u.uid })),
    ].map((u) => ({ ...u, count: 0, totalUs: 0 }));
    this.c = initialCounters(t0);
    // A controller that has been up for a while: counters start well above zero.
    for (let i = 0; i < 50; i++) this.background(40);
  }

  /** `n` RPCs of `type` from `user`, with a plausible processing time. */
  rpc(type: string, user: string, n: number): void {
    const row = this.types.find((r) => r.key === type);
    const who = this.users.find((u) => u.key === user);
    if (row === undefined || who === undefined || n <= 0) return;
    const us = Math.round((this.avgUs.get(type) ?? 100) * n * (0.5 + this.rng.next()));
    row.count += n;
    row.totalUs += us;
    who.count += n;
    who.totalUs += us;
  }

  jobSubmitted(user: string): void {
    this.c.jobsSubmitted++;
    this.rpc('REQUEST_SUBMIT_BATCH_JOB', user, 1);
  }

  jobStarted(): void {
    this.c.jobsStarted++;
  }

  jobEnded(outcome: 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'TIMEOUT', nodeCount: number): void {
    if (outcome === 'FAILED') this.c.jobsFailed++;
    else if (outcome === 'CANCELLED') this.c.jobsCanceled++;
    else this.c.jobsCompleted++;
    this.rpc('REQUEST_COMPLETE_BATCH_SCRIPT', 'slurm', 1);
    this.rpc('MESSAGE_EPILOG_COMPLETE', 'slurm', nodeCount);
  }

  nodeRegistered(): void {
    this.rpc('MESSAGE_NODE_REGISTRATION_STATUS', 'slurm', 1);
  }

  /** End of a tick: one main scheduler cycle, a backfill cycle every few, background queries. */
  tick(t: number, a: TickActivity): void {
    this.ticks++;
    this.background(1);
    const c = this.c;
    const cycle = 200 + a.tested * 40 + this.rng.int(0, 300);
    c.scheduleCycleLast = cycle;
    c.scheduleCycleMax = Math.max(c.scheduleCycleMax, cycle);
    c.scheduleCycleSum += cycle;
    c.scheduleCycleTotal++;
    c.scheduleCycleDepth += a.tested;
    c.scheduleQueueLength = a.pending;
    c.jobsPending = a.pending;
    c.jobsRunning = a.running;
    c.jobStatesTs = t;
    c.serverThreadCount = 1 + this.rng.int(0, 2) + (this.rng.chance(0.1) ? this.rng.int(1, 8) : 0);
    c.agentQueueSize = this.rng.chance(0.2) ? this.rng.int(1, 6) : 0;
    c.agentCount = c.agentQueueSize > 0 ? 1 : 0;
    c.agentThreadCount = c.agentCount * 2;
    c.bfBackfilledJobs += a.backfilled;
    if (this.ticks % BACKFILL_EVERY_TICKS === 0) this.backfillCycle(t, a.pending);
  }

  snapshot(): FakeDiag {
    const rpcsByType: RpcTypeCounter[] = this.types.map((r) => ({
      type: r.key,
      typeId: r.id,
      count: r.count,
      totalUs: r.totalUs,
    }));
    const rpcsByUser: RpcUserCounter[] = this.users
      .filter((u) => u.count > 0)
      .map((u) => ({ user: u.key, uid: u.id, count: u.count, totalUs: u.totalUs }));
    return { ...this.c, rpcsByType, rpcsByUser };
  }

  /** Monitoring and user queries that arrive whatever the jobs do. */
  private background(scale: number): void {
    this.rpc('REQUEST_NODE_INFO', 'root', scale * this.rng.int(1, 4));
    this.rpc('REQUEST_JOB_INFO', 'root', scale * this.rng.int(1, 2));
    this.rpc('REQUEST_JOB_INFO', this.rng.pick(this.jobUsers).name, scale * this.rng.int(0, 2));
    this.rpc('REQUEST_PARTITION_INFO', 'root', scale * this.rng.int(0, 2));
    this.rpc('REQUEST_STATS_INFO', 'root', scale * this.rng.int(0, 1));
    this.rpc('REQUEST_PING', 'root', scale * this.rng.int(0, 1));
  }

  private backfillCycle(t: number, pending: number): void {
    const c = this.c;
    const depth = Math.min(pending, QUEUE_DEPTH);
    const last = 1000 + depth * 60 + this.rng.int(0, 2000);
    c.bfCycleCounter++;
    c.bfCycleLast = last;
    c.bfCycleMax = Math.max(c.bfCycleMax, last);
    c.bfCycleSum += last;
    c.bfDepthSum += depth;
    c.bfQueueLen = pending;
    c.bfQueueLenSum += pending;
    c.bfWhenLastCycle = t;
  }
}

function initialCounters(t0: number): Counters {
  return {
    reqTimeStart: t0 - 6 * 3600,
    serverThreadCount: 3,
    agentQueueSize: 0,
    agentCount: 0,
    agentThreadCount: 0,
    dbdAgentQueueSize: 0,
    jobsSubmitted: 1290,
    jobsStarted: 1281,
    jobsCompleted: 1190,
    jobsCanceled: 41,
    jobsFailed: 37,
    jobsPending: 0,
    jobsRunning: 0,
    jobStatesTs: t0,
    scheduleCycleMax: 214_748,
    scheduleCycleLast: 1873,
    // Above 2^32 on purpose: v0.0.44 made this counter 64-bit because real controllers get there.
    scheduleCycleSum: 4_400_000_000,
    scheduleCycleTotal: 3_000_000,
    scheduleCycleDepth: 3_100_000,
    scheduleQueueLength: 0,
    bfBackfilledJobs: 311,
    bfCycleCounter: 2870,
    bfCycleSum: 12_082_700,
    bfCycleLast: 3977,
    bfCycleMax: 51_234,
    bfDepthSum: 14_350,
    bfQueueLen: 0,
    bfQueueLenSum: 8610,
    bfWhenLastCycle: t0 - 25,
    rpcsByType: [],
    rpcsByUser: [],
  };
}
