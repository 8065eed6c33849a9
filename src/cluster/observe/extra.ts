/**
 * Families beyond slurmctld's own set: pending-reason counts (from /jobs), license pools (from
 * /licenses), reservations (from /reservations, their nodes' states from /nodes) and fairshare
 * (from /shares), QoS and association limits (from slurmdbd). Each comes only from a
 * sub-collector that has succeeded: a failing /licenses never touches the job families, and a
 * switched-off one leaves its families out.
 */
import { point, type Family, type Point } from '../../telemetry/spec.js';
import { parseNodeGres, type NodeGres } from '../api/decode/gres-detail.js';
import { expandHostlist } from '../hostlist.js';
import {
  FAIRSHARE_METRICS,
  JOB_EXTRA_METRICS,
  LICENSE_METRICS,
  LIMIT_METRICS,
  RESERVATION_METRICS as R,
} from '../metrics.js';
import type {
  SlurmAccountingLimits,
  SlurmJob,
  SlurmLimits,
  SlurmLicense,
  SlurmNode,
  SlurmReservation,
  SlurmShare,
  TresLimit,
} from '../model.js';
import { nodeStateNames } from './native-states.js';
import type { ClusterSnapshot } from '../snapshot.js';
import { nodesByName, uniqueJobs } from '../state.js';
import { eachInSlices, type Slice, type Steps } from '../../steps.js';

/**
 * The families beyond Slurm's own, in pieces (observeSteps): the two passes over the jobs (tens of
 * milliseconds at 100,000 jobs) yield within when the slice is due.
 */
export function* extraFamilySteps(snap: ClusterSnapshot, slice: Slice): Steps<Family[]> {
  const jobs = snap.jobs ? uniqueJobs(snap.jobs.value) : undefined;
  const ofJobs = jobs ? [yield* pendingReasons(jobs, slice), yield* allocatedGpus(jobs, slice)] : [];
  return [
    ...ofJobs,
    ...(snap.licenses ? licenseFamilies(snap.licenses.value) : []),
    ...(snap.reservations ? reservationFamilies(snap.reservations.value, snap.nodes?.value) : []),
    ...(snap.shares ? fairshareFamilies(snap.shares.value) : []),
    ...(snap.limits ? limitFamilies(snap.limits.value) : []),
  ];
}

/** Pending jobs by (reason, partition); a job submitted to several partitions counts in each. */
function* pendingReasons(jobs: readonly SlurmJob[], slice: Slice): Steps<Family> {
  const counts = new Map<string, { reason: string; partition: string; n: number }>();
  const count = (job: SlurmJob): void => {
    if (job.state[0] !== 'PENDING') return;
    const reason = job.state_reason ?? '';
    for (const partition of (job.partition ?? '').split(',')) {
      const key = `${reason.length}:${reason}${partition}`;
      const c = counts.get(key) ?? { reason, partition, n: 0 };
      c.n += 1;
      counts.set(key, c);
    }
  };
  yield* eachInSlices(jobs, count, slice);
  const points = [...counts.values()].map((c) =>
    point(JOB_EXTRA_METRICS.pendingReason, { reason: c.reason, partition: c.partition }, c.n),
  );
  return { spec: JOB_EXTRA_METRICS.pendingReason, points };
}

/**
 * The GPUs of each running job per node: gres_detail's entries pair with the job's hosts in
 * hostlist order. A job whose hostlist cannot be expanded gets none (counted as a bad hostlist);
 * unreadable entries were counted when the response came (fetchers.ts), their readable GPUs kept.
 */
function* allocatedGpus(jobs: readonly SlurmJob[], slice: Slice): Steps<Family> {
  const spec = JOB_EXTRA_METRICS.gpuAllocated;
  // Entries repeat across jobs (same shape on many nodes): each distinct one is read once.
  const read = new Map<string, NodeGres>();
  const points: Point[] = [];
  const add = (job: SlurmJob): void => {
    const detail = job.gres_detail;
    if (job.state[0] !== 'RUNNING' || detail === undefined || !detail.some((e) => e !== '')) return;
    const hosts = hostsOf(job.nodes);
    const seen = new Set<string>();
    for (let i = 0; i < Math.min(hosts.length, detail.length); i++) {
      const entry = detail[i] as string;
      let gres = read.get(entry);
      if (gres === undefined) read.set(entry, (gres = parseNodeGres(entry)));
      for (const gpu of gres.gpus) {
        const node = hosts[i] as string;
        if (seen.has(`${node}\u0000${gpu.index}`)) continue;
        seen.add(`${node}\u0000${gpu.index}`);
        points.push(point(spec, { job_id: job.job_id, node_name: node, gpu_index: gpu.index, gpu_type: gpu.type }, 1));
      }
    }
  };
  yield* eachInSlices(jobs, add, slice);
  return { spec, points };
}

/** A job's hosts in hostlist order; none when the list cannot be expanded. */
function hostsOf(list: string): string[] {
  try {
    return expandHostlist(list);
  } catch {
    return [];
  }
}

function licenseFamilies(licenses: readonly SlurmLicense[]): Family[] {
  const unique = [...new Map(licenses.map((l) => [l.name, l])).values()];
  const fam = (key: keyof typeof LICENSE_METRICS): Family => ({
    spec: LICENSE_METRICS[key],
    points: unique.flatMap((l) =>
      l[key] === undefined ? [] : [point(LICENSE_METRICS[key], { license: l.name }, l[key] as number)],
    ),
  });
  return [fam('total'), fam('used'), fam('free'), fam('reserved')];
}

function reservationFamilies(list: readonly SlurmReservation[], nodes: readonly SlurmNode[] | undefined): Family[] {
  const unique = [...new Map(list.map((r) => [r.name, r])).values()];
  const per = (
    spec: (typeof R)['startTime' | 'endTime' | 'nodes' | 'cores'],
    value: (r: SlurmReservation) => number | undefined,
  ): Family => ({
    spec,
    points: unique.flatMap((r) => {
      const v = value(r);
      return v === undefined ? [] : [point(spec, { reservation: r.name }, v)];
    }),
  });
  const info = unique.map((r) =>
    point(
      R.info,
      {
        reservation: r.name,
        partition: r.partition ?? '',
        flags: r.flags.join(','),
        users: r.users ?? '',
        accounts: r.accounts ?? '',
        nodes: r.node_list,
      },
      1,
    ),
  );
  return [
    { spec: R.info, points: info },
    per(R.startTime, (r) => r.start_time),
    per(R.endTime, (r) => r.end_time),
    per(R.nodes, (r) => r.node_count),
    per(R.cores, (r) => r.core_count),
    ...(nodes ? [reservationNodeStates(unique, nodes)] : []),
  ];
}

/**
 * The states of each reservation's nodes; a reservation whose hostlist cannot be read gets none
 * (counted and logged where the response is decoded: fetchers.ts).
 */
function reservationNodeStates(list: readonly SlurmReservation[], nodes: readonly SlurmNode[]): Family {
  const byName = nodesByName(nodes);
  const points = list.flatMap((r) => {
    let names: string[];
    try {
      names = expandHostlist(r.node_list);
    } catch {
      return [];
    }
    const counts = new Map<ReturnType<typeof nodeStateNames>[number], number>();
    for (const name of names) {
      const node = byName.get(name);
      if (node !== undefined) for (const s of nodeStateNames(node)) counts.set(s, (counts.get(s) ?? 0) + 1);
    }
    return [...counts].map(([state, n]) => point(R.nodeStates, { reservation: r.name, state }, n));
  });
  return { spec: R.nodeStates, points };
}

const SHARE_VALUES: readonly [keyof typeof FAIRSHARE_METRICS, keyof SlurmShare][] = [
  ['rawShares', 'shares'],
  ['normShares', 'shares_normalized'],
  ['rawUsage', 'usage'],
  ['normUsage', 'usage_normalized'],
  ['effectiveUsage', 'effective_usage'],
  ['factor', 'fairshare_factor'],
  ['level', 'fairshare_level'],
];

/** An account row is labelled by the account; a user row by the user and the account it is in. */
function fairshareFamilies(rows: readonly SlurmShare[]): Family[] {
  const labelled = rows.map((r) => ({
    r,
    attributes:
      r.kind === 'user'
        ? { account: r.parent, user: r.name, partition: r.partition }
        : { account: r.name, user: '', partition: r.partition },
  }));
  const seen = new Set<string>();
  const unique = labelled.filter(({ attributes: a }) => {
    const key = JSON.stringify([a.account, a.user, a.partition]);
    return seen.has(key) ? false : (seen.add(key), true);
  });
  return SHARE_VALUES.map(([key, field]) => ({
    spec: FAIRSHARE_METRICS[key],
    points: unique.flatMap(({ r, attributes }) => {
      const v = r[field];
      return typeof v === 'number' && Number.isFinite(v) ? [point(FAIRSHARE_METRICS[key], attributes, v)] : [];
    }),
  }));
}

/**
 * The set limits and TRES limits of each owner (a QoS, an association), each owner once: the first
 * of a repeated key wins, as does the first of a repeated TRES limit.
 */
function limitPoints<T extends SlurmLimits>(
  owners: readonly T[],
  key: (owner: T) => string,
  value: (owner: T, limit: string, value: number) => Point,
  tres: (owner: T, limit: TresLimit) => Point,
): { values: Point[]; tres: Point[] } {
  const out = { values: [] as Point[], tres: [] as Point[] };
  const seen = new Set<string>();
  for (const owner of owners) {
    if (seen.has(key(owner))) continue;
    seen.add(key(owner));
    for (const [limit, v] of Object.entries(owner.values)) out.values.push(value(owner, limit, v));
    const tresSeen = new Set<string>();
    for (const t of owner.tres) {
      if (tresSeen.has(`${t.limit}\0${t.tres}`)) continue;
      tresSeen.add(`${t.limit}\0${t.tres}`);
      out.tres.push(tres(owner, t));
    }
  }
  return out;
}

function limitFamilies(l: SlurmAccountingLimits): Family[] {
  const qos = limitPoints(
    l.qos,
    (q) => q.qos,
    (q, limit, v) => point(LIMIT_METRICS.qos, { qos: q.qos, limit }, v),
    (q, t) => point(LIMIT_METRICS.qosTres, { qos: q.qos, limit: t.limit, tres: t.tres }, t.count),
  );
  const assoc = limitPoints(
    l.associations,
    (a) => JSON.stringify([a.account, a.user, a.partition]),
    (a, limit, v) =>
      point(LIMIT_METRICS.association, { account: a.account, user: a.user, partition: a.partition, limit }, v),
    (a, t) =>
      point(
        LIMIT_METRICS.associationTres,
        { account: a.account, user: a.user, partition: a.partition, limit: t.limit, tres: t.tres },
        t.count,
      ),
  );
  return [
    { spec: LIMIT_METRICS.qos, points: qos.values },
    { spec: LIMIT_METRICS.qosTres, points: qos.tres },
    { spec: LIMIT_METRICS.association, points: assoc.values },
    { spec: LIMIT_METRICS.associationTres, points: assoc.tres },
  ];
}
