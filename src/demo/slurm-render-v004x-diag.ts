/**
 * The controller's diagnostics (`/slurm/vX/diag`) of the fake cluster in the data_parser wire
 * shapes v0.0.40–v0.0.45: counters that wrap at 2^32 before v0.0.44, averages in number structs
 * from v0.0.41, per-version members from the SPANS table of slurm-render-v004x.ts.
 */
import type { FakeDiag } from './fake-cluster-types.js';
import { average, sortedRpcTypes, sortedRpcUsers, SCHEDULE_CYCLES_PER_MINUTE } from './fake-cluster-derived.js';
import { nv, shaped, UINT32, type Ctx4x, type Minor, type Obj } from './slurm-render-v004x.js';

function rpcRows4x(d: FakeDiag, v: Minor): { byType: Obj[]; byUser: Obj[] } {
  const avg = (total: number, count: number): unknown => (v >= 41 ? nv(average(total, count)) : average(total, count));
  const byType = sortedRpcTypes(d).map((r) =>
    shaped('rpcType', v, {
      message_type: r.type,
      type_id: r.typeId,
      count: r.count,
      queued: 0,
      dropped: 0,
      cycle_last: 0,
      cycle_max: 0,
      total_time: r.totalUs,
      average_time: avg(r.totalUs, r.count),
    }),
  );
  const byUser = sortedRpcUsers(d).map((r) => ({
    user: r.user,
    user_id: r.uid,
    count: r.count,
    total_time: r.totalUs,
    average_time: avg(r.totalUs, r.count),
  }));
  return { byType, byUser };
}

/** uint32 until v0.0.44 (wrapped, as the 32-bit field holds it). */
function scheduleCycleSum(d: FakeDiag, v: Minor): number {
  return v >= 44 ? d.scheduleCycleSum : d.scheduleCycleSum % UINT32;
}

export function diagStats4x(d: FakeDiag, c: Ctx4x): Obj {
  const v = c.minor;
  const rows = rpcRows4x(d, v);
  const bfDepthMean = average(d.bfDepthSum, d.bfCycleCounter);
  return shaped('diag', c.minor, {
    parts_packed: 1,
    req_time: nv(c.view.now),
    req_time_start: nv(d.reqTimeStart),
    server_thread_count: d.serverThreadCount,
    agent_queue_size: d.agentQueueSize,
    agent_count: d.agentCount,
    agent_thread_count: d.agentThreadCount,
    dbd_agent_queue_size: d.dbdAgentQueueSize,
    gettimeofday_latency: 18,
    schedule_cycle_max: d.scheduleCycleMax,
    schedule_cycle_last: d.scheduleCycleLast,
    schedule_cycle_sum: scheduleCycleSum(d, v),
    schedule_cycle_total: d.scheduleCycleTotal,
    schedule_cycle_mean: average(d.scheduleCycleSum, d.scheduleCycleTotal),
    schedule_cycle_mean_depth: average(d.scheduleCycleDepth, d.scheduleCycleTotal),
    schedule_cycle_per_minute: SCHEDULE_CYCLES_PER_MINUTE,
    schedule_cycle_depth: d.scheduleCycleDepth % UINT32,
    schedule_queue_length: d.scheduleQueueLength,
    schedule_exit: {
      end_job_queue: d.scheduleCycleTotal % UINT32,
      default_queue_depth: 0,
      max_job_start: 0,
      max_rpc_cnt: 0,
      max_sched_time: 0,
      licenses: 0,
    },
    jobs_submitted: d.jobsSubmitted,
    jobs_started: d.jobsStarted,
    jobs_completed: d.jobsCompleted,
    jobs_canceled: d.jobsCanceled,
    jobs_failed: d.jobsFailed,
    jobs_pending: d.jobsPending,
    jobs_running: d.jobsRunning,
    job_states_ts: nv(d.jobStatesTs),
    bf_backfilled_jobs: d.bfBackfilledJobs,
    bf_last_backfilled_jobs: 0,
    bf_backfilled_het_jobs: 0,
    bf_cycle_counter: d.bfCycleCounter,
    bf_cycle_mean: average(d.bfCycleSum, d.bfCycleCounter),
    bf_depth_mean: bfDepthMean,
    bf_depth_mean_try: bfDepthMean,
    bf_cycle_sum: d.bfCycleSum,
    bf_cycle_last: d.bfCycleLast,
    bf_cycle_max: d.bfCycleMax,
    bf_last_depth: Math.min(d.bfQueueLen, 100),
    bf_last_depth_try: Math.min(d.bfQueueLen, 100),
    bf_depth_sum: d.bfDepthSum,
    bf_depth_try_sum: d.bfDepthSum,
    bf_queue_len: d.bfQueueLen,
    bf_queue_len_mean: average(d.bfQueueLenSum, d.bfCycleCounter),
    bf_queue_len_sum: d.bfQueueLenSum,
    bf_table_size: 1,
    bf_table_size_mean: 1,
    bf_table_size_sum: d.bfCycleCounter,
    bf_when_last_cycle: nv(d.bfWhenLastCycle),
    bf_active: false,
    bf_exit: {
      end_job_queue: d.bfCycleCounter,
      bf_max_job_start: 0,
      bf_max_job_test: 0,
      bf_max_time: 0,
      bf_node_space_size: 0,
      state_changed: 0,
    },
    rpcs_by_message_type: rows.byType,
    rpcs_by_user: rows.byUser,
    pending_rpcs: [],
    pending_rpcs_by_hostlist: [],
  });
}
