/**
 * Families beyond slurmctld's own set: pending-reason counts (from /jobs) and license pools (from
 * /licenses). Each comes only from a sub-collector that has succeeded: a failing /licenses never
 * touches the job families, and a switched-off one leaves its families out.
 */
import type { Family } from '../telemetry/spec.js';
import { JOB_EXTRA_METRICS, LICENSE_METRICS } from './metrics.js';
import type { SlurmJob, SlurmLicense } from './model.js';
import type { ClusterSnapshot } from './snapshot.js';
import { uniqueJobs } from './state.js';

export function extraFamilies(snap: ClusterSnapshot): Family[] {
  return [...(snap.jobs ? [pendingReasons(uniqueJobs(snap.jobs.value))] : []), ...(snap.licenses ? licenseFamilies(snap.licenses.value) : [])];
}

/** Pending jobs by (reason, partition); a job submitted to several partitions counts in each. */
function pendingReasons(jobs: readonly SlurmJob[]): Family {
  const counts = new Map<string, { reason: string; partition: string; n: number }>();
  for (const job of jobs) {
    if (job.state[0] !== 'PENDING') continue;
    const reason = job.state_reason ?? '';
    for (const partition of (job.partition ?? '').split(',')) {
      const key = `${reason.length}:${reason}${partition}`;
      const c = counts.get(key) ?? { reason, partition, n: 0 };
      c.n += 1;
      counts.set(key, c);
    }
  }
  const points = [...counts.values()].map((c) => ({ attributes: { reason: c.reason, partition: c.partition }, value: c.n }));
  return { spec: JOB_EXTRA_METRICS.pendingReason, points };
}

function licenseFamilies(licenses: readonly SlurmLicense[]): Family[] {
  const unique = [...new Map(licenses.map((l) => [l.name, l])).values()];
  const fam = (key: keyof typeof LICENSE_METRICS): Family => ({
    spec: LICENSE_METRICS[key],
    points: unique.flatMap((l) => (l[key] === undefined ? [] : [{ attributes: { license: l.name }, value: l[key] as number }])),
  });
  return [fam('total'), fam('used'), fam('free'), fam('reserved')];
}
