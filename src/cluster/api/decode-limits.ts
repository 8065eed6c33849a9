/**
 * QoS and association limits from slurmdbd (`GET /slurmdb/vX/qos/`, `/associations/`). The limit
 * members sit at the same paths in every version (v0.0.38 has plain numbers or null, v0.0.40+
 * `{set, infinite, number}` structs; unset and infinite both mean "no limit" and are left out);
 * the list is `QOS` in v0.0.38 and `qos` from v0.0.40. TRES limits are `{type, name, count}`
 * arrays. Never throws.
 */
import type { Decoded, ItemResult, SlurmAssociationLimits, SlurmLimits, SlurmQosLimits, TresLimit } from '../model.js';
import { NOT_AN_OBJECT } from './common.js';
import { decodeList, notAnObject } from './envelope.js';
import { isRecord, num, path } from './read.js';
import { text } from './states.js';

type Path = readonly string[];
/** Minutes on the wire, seconds exported. */
interface Scalar {
  readonly at: Path;
  readonly minutes?: boolean;
}

const QOS_SCALARS: Readonly<Record<string, Scalar>> = {
  priority: { at: ['priority'] },
  usage_factor: { at: ['usage_factor'] },
  grp_jobs: { at: ['limits', 'max', 'active_jobs', 'count'] },
  // GrpSubmitJobs has a member from v0.0.42 (Slurm 24.11).
  grp_submit_jobs: { at: ['limits', 'max', 'jobs', 'count'] },
  max_jobs_per_user: { at: ['limits', 'max', 'jobs', 'active_jobs', 'per', 'user'] },
  max_jobs_per_account: { at: ['limits', 'max', 'jobs', 'active_jobs', 'per', 'account'] },
  max_submit_jobs_per_user: { at: ['limits', 'max', 'jobs', 'per', 'user'] },
  max_submit_jobs_per_account: { at: ['limits', 'max', 'jobs', 'per', 'account'] },
  max_wall_seconds: { at: ['limits', 'max', 'wall_clock', 'per', 'job'], minutes: true },
  grp_wall_seconds: { at: ['limits', 'max', 'wall_clock', 'per', 'qos'], minutes: true },
};
const QOS_TRES: Readonly<Record<string, Path>> = {
  grp_tres: ['limits', 'max', 'tres', 'total'],
  // GrpTRESMins has a member from v0.0.42; MaxTRESMinsPerJob in every version.
  grp_tres_minutes: ['limits', 'max', 'tres', 'minutes', 'total'],
  max_tres_minutes_per_job: ['limits', 'max', 'tres', 'minutes', 'per', 'job'],
  max_tres_per_job: ['limits', 'max', 'tres', 'per', 'job'],
  max_tres_per_node: ['limits', 'max', 'tres', 'per', 'node'],
  max_tres_per_user: ['limits', 'max', 'tres', 'per', 'user'],
  max_tres_per_account: ['limits', 'max', 'tres', 'per', 'account'],
};
const ASSOCIATION_SCALARS: Readonly<Record<string, Scalar>> = {
  shares: { at: ['shares_raw'] },
  priority: { at: ['priority'] },
  // As real slurmdbd 24.11 and 26.05 send them (sacctmgr GrpJobs=50 MaxJobs=20 GrpSubmitJobs=70
  // MaxSubmitJobs=30 MaxWall=60): the `per` members are the association's group limits, except
  // `per.wall_clock`, which is MaxWall; `active` and `total` are the per-job-owner maxima.
  grp_jobs: { at: ['max', 'jobs', 'per', 'count'] },
  grp_submit_jobs: { at: ['max', 'jobs', 'per', 'submitted'] },
  max_wall_seconds: { at: ['max', 'jobs', 'per', 'wall_clock'], minutes: true },
  max_jobs: { at: ['max', 'jobs', 'active'] },
  max_submit_jobs: { at: ['max', 'jobs', 'total'] },
};
const ASSOCIATION_TRES: Readonly<Record<string, Path>> = {
  grp_tres: ['max', 'tres', 'total'],
  grp_tres_minutes: ['max', 'tres', 'group', 'minutes'],
  max_tres_per_job: ['max', 'tres', 'per', 'job'],
  max_tres_per_node: ['max', 'tres', 'per', 'node'],
};

function limits(
  v: Record<string, unknown>,
  scalars: Readonly<Record<string, Scalar>>,
  tresPaths: Readonly<Record<string, Path>>,
): SlurmLimits {
  const values: Record<string, number> = {};
  for (const [name, s] of Object.entries(scalars)) {
    // NO_VAL and INFINITE in their 32-bit forms are "no limit" too.
    const n = num(path(v, ...s.at), { u32: true });
    if (n !== undefined) values[name] = s.minutes === true ? n * 60 : n;
  }
  const tres: TresLimit[] = [];
  for (const [limit, p] of Object.entries(tresPaths)) {
    const list = path(v, ...p);
    if (!Array.isArray(list)) continue;
    for (const t of list) {
      const type = text(isRecord(t) ? t['type'] : undefined);
      const count = num(isRecord(t) ? t['count'] : undefined);
      if (type === undefined || count === undefined || count < 0) continue;
      const name = text(isRecord(t) ? t['name'] : undefined);
      tres.push({ limit, tres: name ? `${type}/${name}` : type, count });
    }
  }
  return { values, tres };
}

export function decodeQos(element: unknown): ItemResult<SlurmQosLimits> {
  if (!isRecord(element)) return NOT_AN_OBJECT;
  const qos = text(element['name']);
  if (qos === undefined) return { ok: false, reason: 'QoS without a name' };
  return { ok: true, item: { qos, ...limits(element, QOS_SCALARS, QOS_TRES) } };
}

export function decodeAssociation(element: unknown): ItemResult<SlurmAssociationLimits> {
  if (!isRecord(element)) return NOT_AN_OBJECT;
  const account = text(element['account']);
  if (account === undefined) return { ok: false, reason: 'association without an account' };
  const item = {
    account,
    user: text(element['user']) ?? '',
    partition: text(element['partition']) ?? '',
    ...limits(element, ASSOCIATION_SCALARS, ASSOCIATION_TRES),
  };
  return { ok: true, item };
}

export function decodeQosList(body: unknown): Decoded<SlurmQosLimits> {
  if (!isRecord(body)) return notAnObject(body, 'qos');
  return decodeList(
    body['qos'] === undefined && body['QOS'] !== undefined ? { ...body, qos: body['QOS'] } : body,
    'qos',
    decodeQos,
  );
}

export function decodeAssociations(body: unknown): Decoded<SlurmAssociationLimits> {
  return decodeList(body, 'associations', decodeAssociation);
}
