/**
 * The constructed v0.0.40–v0.0.45 responses in fixtures/slurm/built/: one small GPU cluster (the
 * fake cluster's own nodes and controller statistics, changed where the scenario needs it, and
 * hand-written jobs) rendered by the fake slurmrestd's own renderer, so the wire shapes of these
 * versions are written once (src/demo/slurm-render-v004x.ts).
 *
 * The simulation never produces some states real clusters send (cloud and reserved nodes, flags of
 * newer releases, per-CPU memory, a `(null)` node list): those are patched into the rendered
 * objects member by member, and a patch may only replace a member the version already sends, so it
 * cannot add one the version does not define. `npm run fixtures` writes the files
 * (scripts/fixtures.ts); test/cluster/fixtures-built.test.ts checks the committed files are what
 * this renders, test/cluster/fixtures-schema.test.ts that they validate against the specs.
 */
import { UNSET, meta4x, nv } from '../src/demo/slurm-render-v004x.js';
import type { Minor } from '../src/demo/slurm-render-v004x.js';
import { renderText } from '../src/demo/slurm-render.js';
import type { Endpoint, RenderVersion } from '../src/demo/slurm-render.js';
import { DEFAULT_START_MS, FakeCluster } from '../src/demo/fake-cluster.js';
import type { ClusterView, FakeDiag, FakeJob, FakeNode, FakeUser } from '../src/demo/fake-cluster-types.js';

/** Reference "now" of the scenario: 2025-11-24 16:00:00 UTC. */
const T = DEFAULT_START_MS / 1000;
const DAY = 86400;

const BUILT_MINORS: readonly Minor[] = [40, 41, 42, 43, 44, 45];

/** The release of the slurmrestd that answers in each version (a 24.05 one still serves v0.0.40). */
const RELEASES: Readonly<Record<Minor, string>> = {
  40: '24.05.4',
  41: '24.05.8',
  42: '24.11.6',
  43: '25.05.8',
  44: '25.11.7',
  45: '26.05.2',
};

type Obj = Record<string, unknown>;
/** Dotted member path → the value that replaces it. */
type Patch = Readonly<Record<string, unknown>>;

// ---------------------------------------------------------------- nodes

/** The nodes of the fake cluster's own builder, in three partitions; newer versions get one more node each. */
function clusterOf(v: Minor): FakeCluster {
  return new FakeCluster({
    clusterName: 'gpu-lab',
    startMs: DEFAULT_START_MS,
    workload: 'none',
    partitions: [
      { name: 'gpu', nodes: 4, gpusPerNode: 8 },
      { name: 'cpu', nodes: v >= 44 ? 4 : 3 },
      { name: 'cloud', nodes: v >= 45 ? 3 : 2 },
    ],
  });
}

/** A cloud node's address is its name; the others are on the cluster network. */
function addressOf(n: FakeNode): string {
  return n.partition === 'cloud' ? n.name : `10.20.${n.partition === 'gpu' ? 1 : 2}.${Number(n.name.slice(-3))}`;
}

const CLOUD: Partial<FakeNode> = { features: ['cloud', 'spot'], cpuLoad: 0, bootTime: 0, slurmdStartTime: 0 };
const HALF_GPU_NODE: Partial<FakeNode> = { allocGpus: 4, allocCpus: 64, allocMemoryMiB: 512000, cpuLoad: 6120 };

/** What happens to the nodes: drains, an outage, allocations (matching the jobs below), idle cloud nodes. */
const NODE_CHANGES: Readonly<Record<string, Partial<FakeNode>>> = {
  'gpu-001': { drain: true, reason: 'GPU health check failed: XID 79', reasonSetBy: 'root', reasonChangedAt: T - 3600 },
  'gpu-002': { ...HALF_GPU_NODE, freeMemMiB: 950112 },
  'gpu-003': {
    downUntil: T + 3600,
    notRespondingSince: T - 2 * 3600,
    reason: 'Not responding',
    reasonSetBy: 'slurm',
    reasonChangedAt: T - 2 * 3600,
    lastBusy: T - 3 * 3600,
  },
  'gpu-004': {
    ...HALF_GPU_NODE,
    drain: true,
    reason: 'maintenance: IB firmware upgrade',
    reasonSetBy: 'admin',
    reasonChangedAt: T - 1800,
  },
  'cpu-001': { allocCpus: 64, allocMemoryMiB: 122880, freeMemMiB: 120333, cpuLoad: 6120 },
  'cloud-001': { ...CLOUD, lastBusy: T - 5 * DAY },
  'cloud-002': { ...CLOUD, lastBusy: T - 2 * DAY },
  'cloud-003': CLOUD,
};

const UNKNOWN_NODE: Patch = { free_mem: UNSET, version: '' };

/** What the simulation does not model: node state flags, several partitions, comments, reservations. */
const NODE_PATCHES: Readonly<Record<string, Patch>> = {
  'gpu-001': { comment: 'nvidia-smi: GPU 3 has fallen off the bus' },
  'gpu-003': { free_mem: UNSET },
  'cpu-001': { partitions: ['cpu', 'debug'] },
  'cpu-002': {
    state: ['IDLE', 'RESERVED', 'MAINTENANCE'],
    reservation: 'maint-2025-11-25',
    partitions: ['cpu', 'debug'],
  },
  'cpu-003': { state: ['IDLE', 'DYNAMIC_NORM'] },
  'cloud-001': { state: ['IDLE', 'CLOUD', 'POWERED_DOWN'], ...UNKNOWN_NODE },
  'cloud-002': { state: ['IDLE', 'CLOUD', 'POWERING_UP'], ...UNKNOWN_NODE },
  // Flags only newer releases know: kept by the decoder as they come.
  'cpu-004': { state: ['IDLE', 'BLOCKED'] },
  'cloud-003': { state: ['IDLE', 'CLOUD', 'POWER_DOWN', 'POWER_DOWN_ASAP'], ...UNKNOWN_NODE },
};

// ---------------------------------------------------------------- jobs

const alice: FakeUser = { name: 'alice', uid: 1001, account: 'ml-research' };
const bob: FakeUser = { name: 'bob', uid: 1002, account: 'ml-research' };

type JobSpec = Partial<FakeJob> & Pick<FakeJob, 'id' | 'name' | 'user' | 'partition' | 'state' | 'submitTime'>;

function job(o: JobSpec): FakeJob {
  return {
    reason: 'None',
    eligibleTime: o.submitTime,
    startTime: 0,
    endTime: 0,
    timeLimitMin: 60,
    nodeCount: 1,
    cpusPerNode: 1,
    memPerNodeMiB: 0,
    gpusPerNode: 0,
    nodeIdx: [],
    nodeList: '',
    runSeconds: 3600,
    outcome: 'COMPLETED',
    exitStatus: 0,
    restartCnt: 0,
    allocTres: '',
    priority: 4294,
    ...o,
  };
}

function jobSpecs(v: Minor): JobSpec[] {
  const specs: JobSpec[] = [
    { id: 2001, name: 'llm-train', user: alice, partition: 'gpu', state: 'RUNNING', submitTime: T - 7300 },
    { id: 2002, name: 'sweep', user: bob, partition: 'cpu', state: 'PENDING', submitTime: T - 600 },
    { id: 2005, name: 'sweep', user: bob, partition: 'cpu', state: 'RUNNING', submitTime: T - 600 },
    { id: 2010, name: 'notebook', user: alice, partition: 'cpu', state: 'RUNNING', submitTime: T - 2 * DAY },
    { id: 1990, name: 'eval', user: alice, partition: 'gpu', state: 'COMPLETED', submitTime: T - 5000 },
    { id: 1991, name: 'preprocess', user: bob, partition: 'cpu', state: 'FAILED', submitTime: T - 900 },
    { id: 1992, name: 'stuck', user: bob, partition: 'cpu', state: 'CANCELLED', submitTime: T - 3000 },
    { id: 1985, name: 'llm-finetune', user: alice, partition: 'gpu', state: 'PENDING', submitTime: T - 3 * 3600 },
    { id: 2020, name: 'big-sim', user: bob, partition: 'gpu', state: 'PENDING', submitTime: T - 120 },
  ];
  const more: Readonly<Record<number, Partial<FakeJob>>> = {
    // A 2-node GPU job.
    2001: {
      ...ran(T - 7200, T - 7200 + 1440 * 60, [1, 3], 'gpu-[002,004]'),
      timeLimitMin: 1440,
      nodeCount: 2,
      cpusPerNode: 64,
      memPerNodeMiB: 512000,
      gpusPerNode: 4,
      allocTres: 'cpu=128,mem=1000G,node=2,billing=128,gres/gpu=8,gres/gpu:h100=8',
    },
    // A pending array master, and one of its tasks running.
    2002: { reason: 'JobArrayTaskLimit', cpusPerNode: 8, memPerNodeMiB: 32768 },
    2005: {
      ...ran(T - 580, T - 580 + 3600, [4], 'cpu-001'),
      cpusPerNode: 8,
      memPerNodeMiB: 32768,
      allocTres: 'cpu=8,mem=32G,node=1,billing=8',
    },
    2010: {
      ...ran(T - 2 * DAY + 10, T - 2 * DAY + 10 + 365 * DAY, [4], 'cpu-001'),
      timeLimitMin: 'UNLIMITED',
      cpusPerNode: 56,
      memPerNodeMiB: 90112,
      allocTres: 'cpu=56,mem=88G,node=1,billing=56',
    },
    1990: {
      ...ran(T - 4990, T - 1390, [1], 'gpu-002'),
      cpusPerNode: 16,
      memPerNodeMiB: 65536,
      gpusPerNode: 1,
      allocTres: 'cpu=16,mem=64G,node=1,billing=16,gres/gpu=1,gres/gpu:h100=1',
    },
    1991: {
      ...ran(T - 890, T - 850, [6], 'cpu-003'),
      reason: 'NonZeroExitCode',
      outcome: 'FAILED',
      exitStatus: 3,
      cpusPerNode: 4,
      memPerNodeMiB: 8192,
      allocTres: 'cpu=4,mem=8G,node=1,billing=4',
    },
    1992: {
      ...ran(T - 2990, T - 1000, [6], 'cpu-003'),
      outcome: 'CANCELLED',
      cpusPerNode: 2,
      memPerNodeMiB: 4096,
      allocTres: 'cpu=2,mem=4G,node=1,billing=2',
    },
    // Requeued: it keeps the TRES of its previous allocation.
    1985: {
      reason: 'BeginTime',
      restartCnt: 1,
      eligibleTime: T + 120,
      cpusPerNode: 64,
      memPerNodeMiB: 512000,
      gpusPerNode: 4,
      allocTres: 'cpu=64,mem=500G,node=1,billing=64,gres/gpu=4,gres/gpu:h100=4',
    },
    2020: { reason: 'Resources', nodeCount: 2, cpusPerNode: 128, memPerNodeMiB: 1000000, gpusPerNode: 8 },
    2030: { reason: 'Priority', cpusPerNode: 8, memPerNodeMiB: 65536, gpusPerNode: 1 },
  };
  if (v >= 44) {
    specs.push({ id: 2030, name: 'urgent-fix', user: alice, partition: 'gpu', state: 'PENDING', submitTime: T - 30 });
  }
  return specs.map((s) => ({ ...s, ...more[s.id], array: ARRAYS[s.id] }));
}

function ran(start: number, end: number, nodeIdx: number[], nodeList: string): Partial<FakeJob> {
  return { startTime: start, endTime: end, nodeIdx, nodeList };
}

const ARRAYS: Readonly<Record<number, FakeJob['array']>> = {
  2002: { jobId: 2002, maxRunning: 2, pendingTasks: [4, 5, 6, 7] },
  2005: { jobId: 2002, maxRunning: 2, taskId: 3 },
};

/** Jobs that asked for memory per CPU (`--mem-per-cpu`), in MiB. */
const MEM_PER_CPU: Readonly<Record<number, number>> = { 2002: 4096, 2005: 4096, 1991: 2048, 1992: 2048 };

function jobPatches(id: number): Patch {
  const perCpu = MEM_PER_CPU[id];
  const memory = perCpu === undefined ? {} : { memory_per_cpu: nv(perCpu), memory_per_node: UNSET };
  if (id === 2001) return { ...memory, mail_user: 'alice@example.org' };
  if (id === 2030) return { ...memory, job_state: ['PENDING', 'EXPEDITING'] };
  return memory;
}

function dbJobPatches(id: number): Patch {
  const perCpu = MEM_PER_CPU[id];
  const memory =
    perCpu === undefined ? {} : { 'required.memory_per_cpu': nv(perCpu), 'required.memory_per_node': UNSET };
  if (id === 2001) return { ...memory, 'tres.allocated': LLM_TRAIN_TRES };
  // slurmdbd prints the node list of some jobs that never ran as `(null)`.
  if (id === 2020) return { ...memory, nodes: '(null)' };
  return memory;
}

/** slurmdbd lists the TRES it tracks even at 0 (energy here). */
const LLM_TRAIN_TRES: readonly Obj[] = [
  ['cpu', '', 1, 128],
  ['mem', '', 2, 1024000],
  ['energy', '', 3, 0],
  ['node', '', 4, 2],
  ['billing', '', 5, 128],
  ['gres', 'gpu', 1001, 8],
  ['gres', 'gpu:h100', 1002, 8],
].map(([type, name, id, count]) => ({ type, name, id, count }));

/** The jobs slurmdbd reports: not every job slurmctld lists (finished, requeued and the newest are missing). */
const ACCOUNTED = new Set([2001, 2002, 2005, 2010, 1990, 1991, 2020]);

// ---------------------------------------------------------------- the controller's statistics

/** The fake controller's opening statistics, with RPC tables of a busy controller. */
function diagOf(cluster: FakeCluster): FakeDiag {
  return {
    ...cluster.view().diag,
    // Above 2^32, as on a busy controller (Soperator's recorded sdiag): v0.0.41–v0.0.43 carry it wrapped.
    scheduleCycleSum: 6442450944,
    rpcsByType: [
      { type: 'REQUEST_NODE_INFO', typeId: 2007, count: 205430, totalUs: 6871947674 },
      { type: 'REQUEST_JOB_INFO', typeId: 2003, count: 102715, totalUs: 512238 },
      { type: 'REQUEST_PARTITION_INFO', typeId: 2009, count: 102711, totalUs: 388001 },
      { type: 'REQUEST_STATS_INFO', typeId: 2035, count: 2880, totalUs: 50112 },
      { type: 'REQUEST_SUBMIT_BATCH_JOB', typeId: 4003, count: 1290, totalUs: 1933002 },
      { type: 'MESSAGE_NODE_REGISTRATION_STATUS', typeId: 1002, count: 45, totalUs: 10234 },
      { type: 'REQUEST_COMPLETE_BATCH_SCRIPT', typeId: 5018, count: 1281, totalUs: 700233 },
    ],
    rpcsByUser: [
      { user: 'root', uid: 0, count: 308145, totalUs: 7384185912 },
      { user: 'slurm', uid: 64030, count: 4206, totalUs: 712467 },
      { user: 'alice', uid: 1001, count: 812, totalUs: 1211010 },
      { user: 'bob', uid: 1002, count: 478, totalUs: 722001 },
    ],
  };
}

// ---------------------------------------------------------------- rendering

function scenario(v: Minor): ClusterView {
  const cluster = clusterOf(v);
  const jobs = jobSpecs(v).map(job);
  const { nodes, qos, associations } = cluster.view();
  return {
    clusterName: cluster.clusterName,
    now: T,
    nodes: nodes.map((n) => ({ ...n, address: addressOf(n), ...NODE_CHANGES[n.name] })),
    jobs,
    accounting: jobs.filter((j) => ACCOUNTED.has(j.id)),
    diag: diagOf(cluster),
    qos,
    associations,
    nodesUpdatedAt: T - 5,
    jobsUpdatedAt: T - 2,
  };
}

/** Replaces members of `o`; throws on one it does not have, so a patch cannot add a member. */
export function patch(o: Obj, p: Patch, where: string): void {
  for (const [path, value] of Object.entries(p)) {
    const keys = path.split('.');
    const last = keys.pop() as string;
    let target: Obj | undefined = o;
    for (const k of keys) target = target?.[k] as Obj | undefined;
    if (target === undefined || !(last in target)) throw new Error(`${where}: no member ${path} to replace`);
    target[last] = value;
  }
}

function rendered(view: ClusterView, v: Minor, endpoint: Endpoint): Obj {
  const version = `v0.0.${v}` as RenderVersion;
  return JSON.parse(renderText(view, version, endpoint, { release: RELEASES[v] })) as Obj;
}

function patchedList(body: Obj, key: string, patches: (item: Obj) => Patch, where: string): Obj {
  for (const item of body[key] as Obj[]) patch(item, patches(item), `${where} ${String(item['name'])}`);
  return body;
}

/** What slurmrestd answers when slurmctld refuses the request: errors and no data. */
function jobsError(view: ClusterView, v: Minor): Obj {
  return {
    jobs: [],
    last_backfill: UNSET,
    last_update: UNSET,
    meta: meta4x({ minor: v, release: RELEASES[v], view }, 'slurmctld'),
    errors: [
      {
        description: 'slurm_load_jobs() failed',
        error_number: 1007,
        error: 'Protocol authentication error',
        source: 'slurm_load_jobs()',
      },
    ],
    warnings: [],
  };
}

function bodies(v: Minor): Readonly<Record<string, Obj>> {
  const view = scenario(v);
  const jobId = (o: Obj): number => Number(o['job_id']);
  return {
    'nodes.json': patchedList(
      rendered(view, v, 'nodes'),
      'nodes',
      (n) => NODE_PATCHES[n['name'] as string] ?? {},
      'node',
    ),
    'jobs.json': patchedList(rendered(view, v, 'jobs'), 'jobs', (j) => jobPatches(jobId(j)), 'job'),
    'diag.json': rendered(view, v, 'diag'),
    'slurmdb-jobs.json': patchedList(
      rendered(view, v, 'slurmdb-jobs'),
      'jobs',
      (j) => dbJobPatches(jobId(j)),
      'db job',
    ),
    'jobs-error.json': jobsError(view, v),
    'qos.json': rendered(view, v, 'qos'),
    'associations.json': rendered(view, v, 'associations'),
  };
}

/** Every built fixture: path under fixtures/slurm/built/ → file text. */
export function builtFixtures(): Map<string, string> {
  const out = new Map<string, string>();
  for (const v of BUILT_MINORS) {
    for (const [file, body] of Object.entries(bodies(v)))
      out.set(`v0.0.${v}/${file}`, `${JSON.stringify(body, null, 2)}\n`);
  }
  return out;
}
