/**
 * The fake cluster's QoS and associations in the model's terms (src/cluster/model.ts), from its
 * own records: what the limits decoders must produce from any v0.0.40+ rendering of them, and the
 * samples the agent must export. Limit names are sacctmgr's in snake case; wall times in seconds.
 */
import type { SlurmAccountingLimits, SlurmLimits, TresLimit } from '../../src/cluster/model.js';
import type { ClusterView, FakeAssociation, FakeQos, FakeTres } from '../../src/demo/fake-cluster-types.js';
import { minorOf, type RenderVersion } from '../../src/demo/slurm-render.js';

type Values = Readonly<Record<string, number | undefined>>;
type TresLists = Readonly<Record<string, readonly FakeTres[]>>;

const minutes = (m: number | undefined): number | undefined => (m === undefined ? undefined : m * 60);

/** Set values only; TRES limits sorted by limit, then TRES. */
function limitsOf(values: Values, tres: TresLists): SlurmLimits {
  const set = Object.entries(values).filter((e): e is [string, number] => e[1] !== undefined);
  const list: TresLimit[] = Object.entries(tres).flatMap(([limit, l]) =>
    l.map((t) => ({ limit, tres: t.name === '' ? t.type : `${t.type}/${t.name}`, count: t.count })),
  );
  return { values: Object.fromEntries(set), tres: sortTres(list) };
}

export function sortTres(list: readonly TresLimit[]): TresLimit[] {
  const key = (t: TresLimit): string => `${t.limit}\0${t.tres}`;
  return [...list].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/** GrpSubmitJobs and GrpTRESMins of a QoS have a member from v0.0.42 only. */
function qosTruth(q: FakeQos, version: RenderVersion): SlurmAccountingLimits['qos'][number] {
  const since42 = minorOf(version) >= 42;
  const values = {
    priority: q.priority,
    usage_factor: q.usageFactor,
    grp_jobs: q.grpJobs,
    grp_submit_jobs: since42 ? q.grpSubmitJobs : undefined,
    max_jobs_per_user: q.maxJobsPerUser,
    max_jobs_per_account: q.maxJobsPerAccount,
    max_submit_jobs_per_user: q.maxSubmitJobsPerUser,
    max_submit_jobs_per_account: q.maxSubmitJobsPerAccount,
    max_wall_seconds: minutes(q.maxWallMinutes),
    grp_wall_seconds: minutes(q.grpWallMinutes),
  };
  const tres = {
    grp_tres: q.grpTres,
    grp_tres_minutes: since42 ? q.grpTresMinutes : [],
    max_tres_minutes_per_job: q.maxTresMinutesPerJob,
    max_tres_per_job: q.maxTresPerJob,
    max_tres_per_node: q.maxTresPerNode,
    max_tres_per_user: q.maxTresPerUser,
    max_tres_per_account: q.maxTresPerAccount,
  };
  return { qos: q.name, ...limitsOf(values, tres) };
}

function associationTruth(a: FakeAssociation): SlurmAccountingLimits['associations'][number] {
  const values = {
    shares: a.shares,
    priority: a.priority,
    max_jobs: a.maxJobs,
    max_submit_jobs: a.maxSubmitJobs,
    max_wall_seconds: minutes(a.maxWallMinutes),
    grp_jobs: a.grpJobs,
    grp_submit_jobs: a.grpSubmitJobs,
  };
  const tres = {
    grp_tres: a.grpTres,
    grp_tres_minutes: a.grpTresMinutes,
    max_tres_per_job: a.maxTresPerJob,
    max_tres_per_node: a.maxTresPerNode,
  };
  return { account: a.account, user: a.user, partition: a.partition, ...limitsOf(values, tres) };
}

export function limitsTruth(view: ClusterView, version: RenderVersion): SlurmAccountingLimits {
  return { qos: view.qos.map((q) => qosTruth(q, version)), associations: view.associations.map(associationTruth) };
}

export interface ExpectedSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** The samples of slurm_qos_limit, slurm_qos_tres_limit, slurm_association_limit and _tres_limit. */
export function limitSamples(l: SlurmAccountingLimits): ExpectedSample[] {
  const of = (prefix: string, owner: Readonly<Record<string, string>>, limits: SlurmLimits): ExpectedSample[] => [
    ...Object.entries(limits.values).map(([limit, value]) => ({
      name: `slurm_${prefix}_limit`,
      labels: { ...owner, limit },
      value,
    })),
    ...limits.tres.map((t) => ({
      name: `slurm_${prefix}_tres_limit`,
      labels: { ...owner, limit: t.limit, tres: t.tres },
      value: t.count,
    })),
  ];
  return [
    ...l.qos.flatMap((q) => of('qos', { qos: q.qos }, q)),
    ...l.associations.flatMap((a) =>
      of('association', { account: a.account, user: a.user, partition: a.partition }, a),
    ),
  ];
}
