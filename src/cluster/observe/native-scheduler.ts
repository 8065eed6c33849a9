/**
 * `/metrics/scheduler`: slurmctld's scheduler figures from slurmrestd's /diag (sdiag's). A field
 * the API version does not carry leaves its family out, never 0.
 */
import type { Family } from '../../telemetry/spec.js';
import { NATIVE_SCHEDULER_METRICS as S } from '../metrics.js';
import type { SlurmDiag } from '../model.js';
import { gaugeOf } from './helpers.js';

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
  if (key === 'bfMeanTableSz') return meanTableSize(diag);
  const src = SCHEDULER_SOURCES[key];
  if (src === 'bf_active') return diag.bf_active === undefined ? undefined : Number(diag.bf_active);
  if (Array.isArray(src)) return diag[src[0]]?.[src[1]];
  return diag[src];
}

/**
 * slurmctld's mean: table sizes summed over cycles, divided (integer) by cycles, 0 before the
 * first. slurmrestd's bf_table_size_mean is another figure (the last cycle's).
 */
function meanTableSize(diag: SlurmDiag): number | undefined {
  const sum = diag.bf_table_size_sum;
  const cycles = diag.bf_cycle_counter;
  if (sum === undefined || cycles === undefined) return undefined;
  return cycles > 0 ? Math.floor(sum / cycles) : 0;
}

export function schedulerFamilies(diag: SlurmDiag): Family[] {
  const out: Family[] = [];
  for (const key of Object.keys(S) as SchedulerKey[]) {
    const v = schedulerValue(diag, key);
    if (v !== undefined && Number.isFinite(v)) out.push(gaugeOf(S[key], v));
  }
  return out;
}
