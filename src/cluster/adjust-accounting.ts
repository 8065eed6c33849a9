/**
 * Accounting rows (slurmdbd's /jobs) adjusted to read like controller rows (slurmctld's /jobs),
 * before any rule sees them.
 */
import { isEmptyHostlist } from './hostlist.js';
import type { SlurmJob } from './model.js';

/** Pending accounting rows older than this that never started nor ended are dropped as zombies. */
export const ZOMBIE_PENDING_AGE_MS = 30 * 24 * 3600 * 1000;

/**
 * What Soperator does to slurmdbd rows so accounting-mode series match controller-mode ones: an
 * accounting response is not exposed as it comes. Controller rows pass through unchanged.
 * The tres_req fallback for CPUs and memory needs nothing here: jobCpuCount/jobMemoryBytes apply
 * it to every job, as Soperator's exporter does.
 */
export function adjustAccountingJobs(jobs: readonly SlurmJob[], nowMs: number): SlurmJob[] {
  const out: SlurmJob[] = [];
  for (const job of jobs) {
    if (job.source !== 'accounting') out.push(job);
    else if (!isZombiePending(job, nowMs)) out.push(adjustAccountingJob(job));
  }
  return out;
}

/** Never started, never ended, submitted over 30 days ago: a lost scancel, not a queued job. */
function isZombiePending(job: SlurmJob, nowMs: number): boolean {
  return (
    job.start_time === undefined &&
    job.end_time === undefined &&
    job.submit_time !== undefined &&
    job.submit_time * 1000 < nowMs - ZOMBIE_PENDING_AGE_MS
  );
}

function adjustAccountingJob(job: SlurmJob): SlurmJob {
  let out = job;
  // slurmdbd stores end 0 for running jobs; slurmctld forecasts start + limit, so mirror that.
  if (
    (job.state[0] ?? '') === 'RUNNING' &&
    job.end_time === undefined &&
    job.start_time !== undefined &&
    job.time_limit !== undefined
  ) {
    out = { ...out, end_time: job.start_time + job.time_limit * 60 };
  }
  if (job.nodes !== '' && isEmptyHostlist(job.nodes)) out = { ...out, nodes: '' };
  // slurmdbd reports 0 allocated nodes for pending jobs; memory_per_node × 0 would claim 0 bytes.
  if (job.node_count === 0) {
    const { node_count: _zero, ...rest } = out;
    out = rest;
  }
  return out;
}
