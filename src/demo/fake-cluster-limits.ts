/**
 * The QoS and associations the fake cluster's slurmdbd holds, as an administrator sets them with
 * sacctmgr: the default `normal` QoS (only its priority and usage factor), a `high` one with group,
 * per-user and per-job limits, a `debug` one with short wall times and per-account limits; an
 * association for root, for each account and for each user in it, and one user limited further
 * on one partition. They do not move with the workload.
 */
import type { FakeAssociation, FakeQos, FakeTres, FakeUser } from './fake-cluster-types.js';
import { TRES_IDS } from './fake-cluster-derived.js';

/** `cpu=512,gres/gpu=32` (memory in MiB) as slurmdbd's TRES list. */
function tres(spec: string): FakeTres[] {
  return spec.split(',').map((item) => {
    const [key = '', count = ''] = item.split('=');
    const [type = '', name = ''] = key.split('/');
    const id = (TRES_IDS as Readonly<Record<string, number>>)[key];
    if (id === undefined) throw new Error(`no TRES id for ${key}`);
    return { type, name, id, count: Number(count) };
  });
}

const NO_TRES_LIMITS = {
  grpTres: [],
  maxTresPerJob: [],
  maxTresPerNode: [],
  maxTresPerUser: [],
  maxTresPerAccount: [],
  grpTresMinutes: [],
  maxTresMinutesPerJob: [],
};

export const FAKE_QOS: readonly FakeQos[] = [
  {
    ...NO_TRES_LIMITS,
    id: 1,
    name: 'normal',
    description: 'Normal QOS default',
    flags: [],
    priority: 0,
    usageFactor: 1,
  },
  {
    ...NO_TRES_LIMITS,
    id: 2,
    name: 'high',
    description: 'Deadline work',
    flags: ['DENY_LIMIT'],
    priority: 1000,
    usageFactor: 2,
    grpJobs: 32,
    grpSubmitJobs: 128,
    maxJobsPerUser: 4,
    maxSubmitJobsPerUser: 20,
    maxWallMinutes: 24 * 60,
    grpTres: tres('cpu=512,gres/gpu=32'),
    maxTresPerJob: tres('mem=1048576,node=4,gres/gpu=8'),
    maxTresPerUser: tres('cpu=256,gres/gpu=16'),
    grpTresMinutes: tres('gres/gpu=600000'),
  },
  {
    ...NO_TRES_LIMITS,
    id: 3,
    name: 'debug',
    description: 'Short test jobs',
    flags: [],
    priority: 500,
    usageFactor: 0.5,
    maxJobsPerAccount: 10,
    maxSubmitJobsPerAccount: 50,
    maxWallMinutes: 30,
    grpWallMinutes: 600,
    maxTresPerNode: tres('cpu=32'),
    maxTresPerAccount: tres('node=2'),
    maxTresMinutesPerJob: tres('cpu=960'),
  },
];

type AssociationLimits = Partial<Omit<FakeAssociation, 'id' | 'account' | 'user' | 'partition' | 'parent'>>;

/** Limits on an account's own association, by account (an account not listed has only its shares). */
const ACCOUNT_LIMITS: Readonly<Record<string, AssociationLimits>> = {
  'ml-research': {
    shares: 40,
    qos: ['normal', 'high', 'debug'],
    grpJobs: 64,
    grpSubmitJobs: 200,
    grpTres: tres('gres/gpu=16'),
  },
  physics: { shares: 30, qos: ['normal', 'debug'], grpTres: tres('cpu=256'), grpTresMinutes: tres('cpu=1000000') },
  bio: { shares: 20, maxWallMinutes: 2 * 24 * 60 },
};

/** Limits on a user's association in their account, by user. */
const USER_LIMITS: Readonly<Record<string, AssociationLimits>> = {
  alice: { maxJobs: 10, maxSubmitJobs: 50 },
  bob: { priority: 100, maxTresPerJob: tres('cpu=128') },
  carol: { shares: 2, maxWallMinutes: 12 * 60 },
  erin: { maxJobs: 2, maxTresPerNode: tres('mem=262144') },
};

/** The first user's association on one partition: fewer jobs and GPUs there. */
const PARTITION_LIMITS: AssociationLimits = { maxJobs: 4, maxTresPerJob: tres('gres/gpu=8'), isDefault: false };

const DEFAULTS = {
  shares: 1,
  qos: ['normal'],
  defaultQos: 'normal',
  isDefault: false,
  grpTres: [],
  grpTresMinutes: [],
  maxTresPerJob: [],
  maxTresPerNode: [],
} as const satisfies AssociationLimits;

/** root's, each account's, each user's in their account, and the first user's on `partition`. */
export function associationsOf(users: readonly FakeUser[], partition: string): FakeAssociation[] {
  const out: FakeAssociation[] = [];
  const add = (owner: Pick<FakeAssociation, 'account' | 'user' | 'partition' | 'parent'>, l: AssociationLimits): void =>
    void out.push({ ...DEFAULTS, ...l, ...owner, id: out.length + 1 });
  const accounts = [...new Set(users.map((u) => u.account))].sort();
  add({ account: 'root', user: '', partition: '', parent: '' }, {});
  add({ account: 'root', user: 'root', partition: '', parent: '' }, { isDefault: true });
  for (const account of accounts)
    add({ account, user: '', partition: '', parent: 'root' }, ACCOUNT_LIMITS[account] ?? {});
  for (const u of users) {
    const qos = ACCOUNT_LIMITS[u.account]?.qos ?? DEFAULTS.qos;
    add(
      { account: u.account, user: u.name, partition: '', parent: '' },
      { qos, isDefault: true, ...USER_LIMITS[u.name] },
    );
  }
  const first = users[0];
  if (first !== undefined && partition !== '')
    add({ account: first.account, user: first.name, partition, parent: '' }, PARTITION_LIMITS);
  return out;
}
