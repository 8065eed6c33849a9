/**
 * Renders the fake cluster as slurmrestd answers:
 * `/slurm/vX/{nodes,jobs,diag,partitions,licenses,reservations,shares}/`,
 * `/slurmdb/vX/{jobs,qos,associations}/` and `/openapi/v3`, for API versions v0.0.40–v0.0.45, and
 * for any other a caller supplies a renderer for (the tests supply v0.0.38).
 *
 * Bodies are produced as a stream of JSON text, element by element, never as one string: 100k
 * jobs are ~0.5 GB, more than V8's maximum string length. `bodyParts` yields the pieces,
 * `renderChunks` groups them into chunks for a socket, `renderText` joins them for small clusters.
 */
import type { FakeCluster } from './fake-cluster.js';
import type { ClusterView, FakeJob, FakeNode } from './fake-cluster-types.js';
import { isTerminal } from './fake-cluster-types.js';
import { job4x, meta4x, node4x, nv } from './slurm-render-v004x.js';
import { association4x, dbJob4x, qos4x } from './slurm-render-v004x-dbd.js';
import { diagStats4x } from './slurm-render-v004x-diag.js';
import type { Ctx4x, Minor } from './slurm-render-v004x.js';
import {
  licenseConfig4x,
  partitionConfig4x,
  partitionState4x,
  reservationConfig4x,
  shareTres4x,
  taskBinding4x,
} from './slurm-render-config.js';

export const RENDER_VERSIONS = ['v0.0.38', 'v0.0.40', 'v0.0.41', 'v0.0.42', 'v0.0.43', 'v0.0.44', 'v0.0.45'] as const;
export type RenderVersion = (typeof RENDER_VERSIONS)[number];

export type Endpoint =
  | 'nodes'
  | 'jobs'
  | 'diag'
  | 'partitions'
  | 'licenses'
  | 'reservations'
  | 'shares'
  | 'slurmdb-jobs'
  | 'qos'
  | 'associations';

/**
 * Served from v0.0.40 only: `/shares` is new in Slurm 23.11, and slurmdbd's QoS and associations
 * are rendered in the v0.0.40+ shapes only (22.05's are among the recorded responses).
 */
export const FROM_V0040: ReadonlySet<Endpoint> = new Set(['shares', 'qos', 'associations']);

/** The Slurm release a slurmrestd reports when this is the newest version it serves. */
export const DEFAULT_RELEASES: Readonly<Record<RenderVersion, string>> = {
  'v0.0.38': '22.05.8',
  'v0.0.40': '23.11.10',
  'v0.0.41': '24.05.8',
  'v0.0.42': '24.11.6',
  'v0.0.43': '25.05.5',
  'v0.0.44': '25.11.2',
  'v0.0.45': '26.05.0',
};

/** `/slurmdb/vX/jobs/` filters (times in Unix seconds). */
export interface AccountingQuery {
  readonly cluster?: string;
  readonly startTime?: number;
  readonly endTime?: number;
}

/** Plans the body of one endpoint in one API version's wire shape. */
export type BodyPlanner = (view: ClusterView, endpoint: Endpoint, opts: RenderOptions) => BodyPlan;
/**
 * Renderers for versions the package does not render itself (v0.0.38 is rendered by the tests'
 * own support code): a fake slurmrestd serves a version only with a renderer for it.
 */
export type Renderers = Readonly<Partial<Record<RenderVersion, BodyPlanner>>>;

export interface RenderOptions {
  /** `meta.slurm.release`; default DEFAULT_RELEASES[version]. */
  readonly release?: string;
  readonly query?: AccountingQuery;
  /** Minimum chunk size of `renderChunks`, in characters (all output is ASCII). */
  readonly chunkChars?: number;
  /**
   * Print as real slurmrestd does (fixtures/slurm/recorded/): two-space indents, `": "`, and `/`
   * escaped as `\\/`. Off by default: compact bodies are a third of the size for big clusters.
   */
  readonly pretty?: boolean;
  /** Renderers added to (or replacing) the built-in v0.0.40–v0.0.45 ones. */
  readonly renderers?: Renderers;
}

export function isRenderVersion(v: string): v is RenderVersion {
  return (RENDER_VERSIONS as readonly string[]).includes(v);
}

const DEFAULT_CHUNK_CHARS = 64 * 1024;

/** A body is one object (diag) or a list with envelope members before and after it. */
export type BodyPlan =
  | { readonly kind: 'object'; readonly body: Readonly<Record<string, unknown>> }
  | {
      readonly kind: 'list';
      readonly key: string;
      readonly items: readonly unknown[];
      readonly render: (item: unknown) => unknown;
      /** Members before the list (v0.0.38 puts meta and errors first, as 22.05 does). */
      readonly head: Readonly<Record<string, unknown>>;
      readonly tail: Readonly<Record<string, unknown>>;
    };

export type Members = Readonly<Record<string, unknown>>;

/** A list body: its elements rendered one by one, between envelope members. */
export function list<T>(
  key: string,
  items: readonly T[],
  render: (item: T) => unknown,
  head: Members,
  tail: Members,
): BodyPlan {
  return { kind: 'list', key, items, render: render as (item: unknown) => unknown, head, tail };
}

export function minorOf(version: RenderVersion): number {
  return Number(version.slice(version.lastIndexOf('.') + 1));
}

/** The accounting rows a `/slurmdb/vX/jobs/` query selects. */
export function accountingJobs(view: ClusterView, q: AccountingQuery | undefined): readonly FakeJob[] {
  if (q === undefined) return view.accounting;
  if (q.cluster !== undefined && q.cluster !== '' && q.cluster !== view.clusterName) return [];
  return view.accounting.filter(
    (j) =>
      (q.endTime === undefined || j.submitTime <= q.endTime) &&
      (q.startTime === undefined || !isTerminal(j) || j.endTime >= q.startTime),
  );
}

function plan4x(view: ClusterView, version: RenderVersion, endpoint: Endpoint, opts: RenderOptions): BodyPlan {
  const c: Ctx4x = { minor: minorOf(version) as Minor, release: opts.release ?? DEFAULT_RELEASES[version], view };
  const envelope = (daemon: 'slurmctld' | 'slurmdbd') => ({ meta: meta4x(c, daemon), errors: [], warnings: [] });
  switch (endpoint) {
    case 'nodes':
      return list(
        'nodes',
        view.nodes,
        (n) => node4x(n, c),
        {},
        { last_update: nv(view.nodesUpdatedAt), ...envelope('slurmctld') },
      );
    case 'jobs': {
      const tail = {
        last_backfill: nv(view.diag.bfWhenLastCycle),
        last_update: nv(view.jobsUpdatedAt),
        ...envelope('slurmctld'),
      };
      return list('jobs', view.jobs, (j) => job4x(j, c), {}, tail);
    }
    case 'diag':
      return { kind: 'object', body: { statistics: diagStats4x(view.diag, c), ...envelope('slurmctld') } };
    case 'partitions': {
      const parts = partitionsOf(view);
      return list(
        'partitions',
        parts,
        (p) => partition4x(p, c.minor, p === parts[0]),
        {},
        { last_update: nv(view.nodesUpdatedAt), ...envelope('slurmctld') },
      );
    }
    case 'licenses':
      return list(
        'licenses',
        licensesOf(view),
        (l) => ({ ...l, ...licenseConfig4x(c.minor) }),
        {},
        { last_update: nv(view.jobsUpdatedAt), ...envelope('slurmctld') },
      );
    case 'reservations':
      return list(
        'reservations',
        reservationsOf(view),
        (r) => ({ ...(reservationWire(r, nv) as object), ...reservationConfig4x(c.minor, coresOf(r)) }),
        {},
        { last_update: nv(view.nodesUpdatedAt), ...envelope('slurmctld') },
      );
    case 'shares': {
      const rows = sharesOf(view);
      return {
        kind: 'object',
        body: {
          shares: { shares: rows.map((r) => shareWire(r, c.minor)), total_shares: rows.length },
          ...envelope('slurmctld'),
        },
      };
    }
    case 'slurmdb-jobs':
      return list('jobs', accountingJobs(view, opts.query), (j) => dbJob4x(j, c), {}, envelope('slurmdbd'));
    case 'qos':
      return list('qos', view.qos, (q) => qos4x(q, c), {}, envelope('slurmdbd'));
    case 'associations':
      return list('associations', view.associations, (a) => association4x(a, c), {}, envelope('slurmdbd'));
  }
}

/** A partition as the fake cluster holds it: the nodes that name it, in node order. */
export interface FakePartition {
  readonly name: string;
  readonly nodes: readonly FakeNode[];
}

export function partitionsOf(view: ClusterView): FakePartition[] {
  const byName = new Map<string, FakeNode[]>();
  for (const n of view.nodes) byName.set(n.partition, [...(byName.get(n.partition) ?? []), n]);
  return [...byName].map(([name, nodes]) => ({ name, nodes }));
}

/** A partition's configured TRES string, summed over its nodes. */
export function partitionTres(p: FakePartition): string {
  const cpus = p.nodes.reduce((a, n) => a + n.cpus, 0);
  const mem = p.nodes.reduce((a, n) => a + n.realMemoryMiB, 0);
  const gpus = p.nodes.reduce((a, n) => a + n.gpus, 0);
  return `cpu=${cpus},mem=${mem}M,node=${p.nodes.length},billing=${cpus}${gpus > 0 ? `,gres/gpu=${gpus}` : ''}`;
}

/** Total of the fake cluster's one license pool. */
export const FAKE_LICENSE_TOTAL = 16;

/**
 * One license pool, `fluent`, same shape in every version: each running job holds one, two are
 * reserved for a maintenance window.
 */
export function licensesOf(view: ClusterView): Readonly<Record<string, string | number | boolean>>[] {
  const used = Math.min(FAKE_LICENSE_TOTAL - 2, view.jobs.filter((j) => j.state === 'RUNNING').length);
  return [
    {
      LicenseName: 'fluent',
      Total: FAKE_LICENSE_TOTAL,
      Used: used,
      Free: FAKE_LICENSE_TOTAL - 2 - used,
      Remote: false,
      Reserved: 2,
    },
  ];
}

/** The fake's one reservation: a maintenance window on the first two nodes, from in an hour for an hour. */
export interface FakeReservation {
  readonly name: string;
  readonly partition: string;
  readonly flags: readonly string[];
  readonly nodes: readonly FakeNode[];
  readonly start: number;
  readonly end: number;
}

export function reservationsOf(view: ClusterView): FakeReservation[] {
  const nodes = view.nodes.slice(0, 2);
  const first = nodes[0];
  if (first === undefined) return [];
  const start = Math.floor(view.now / 3600) * 3600 + 3600;
  return [
    {
      name: 'maint-window',
      partition: first.partition,
      flags: ['MAINT', 'IGNORE_JOBS'],
      nodes,
      start,
      end: start + 3600,
    },
  ];
}

export function reservationWire(r: FakeReservation, time: (n: number) => unknown): unknown {
  return {
    name: r.name,
    partition: r.partition,
    flags: r.flags,
    node_list: r.nodes.map((n) => n.name).join(','),
    node_count: r.nodes.length,
    core_count: r.nodes.reduce((a, n) => a + n.sockets * n.coresPerSocket, 0),
    start_time: time(r.start),
    end_time: time(r.end),
    users: 'root',
    accounts: '',
  };
}

/** One sshare row of the fake: root, each account under it, each user under their account. */
export interface FakeShare {
  readonly id: number;
  readonly name: string;
  readonly parent: string;
  readonly user: boolean;
  /** Jobs listed × 100, the fake's usage. */
  readonly usage: number;
  readonly normUsage: number;
}

export function sharesOf(view: ClusterView): FakeShare[] {
  const usage = new Map<string, number>();
  const add = (key: string, n: number): void => void usage.set(key, (usage.get(key) ?? 0) + n);
  for (const j of view.jobs) {
    add('root', 100);
    add(`a:${j.user.account}`, 100);
    add(`u:${j.user.account}:${j.user.name}`, 100);
  }
  const total = usage.get('root') ?? 0;
  const norm = (n: number): number => (total === 0 ? 0 : n / total);
  const rows: FakeShare[] = [{ id: 1, name: 'root', parent: '', user: false, usage: total, normUsage: 1 }];
  for (const [key, n] of [...usage].filter(([k]) => k !== 'root').sort()) {
    const [kind, account, user] = key.split(':') as [string, string, string | undefined];
    rows.push(
      kind === 'a'
        ? { id: rows.length + 1, name: account, parent: 'root', user: false, usage: n, normUsage: norm(n) }
        : { id: rows.length + 1, name: user as string, parent: account, user: true, usage: n, normUsage: norm(n) },
    );
  }
  return rows;
}

/** v0.0.40–v0.0.41 send effective usage and the fairshare factor as plain numbers, v0.0.42+ as structs. */
function shareWire(r: FakeShare, minor: number): unknown {
  const f = (n: number): unknown => (minor >= 42 ? { set: true, infinite: false, number: n } : n);
  return {
    id: r.id,
    cluster: 'fake',
    name: r.name,
    parent: r.parent,
    partition: '',
    shares: nv(1),
    shares_normalized: nv(0.5),
    usage: r.usage,
    usage_normalized: nv(r.normUsage),
    effective_usage: f(r.normUsage),
    fairshare: { factor: f(1 - r.normUsage), level: f(1 - r.normUsage) },
    tres: shareTres4x(),
    type: [r.user ? 'USER' : 'ASSOCIATION'],
  };
}

function partition4x(p: FakePartition, minor: number, isDefault: boolean): unknown {
  const cpus = p.nodes.reduce((a, n) => a + n.cpus, 0);
  return {
    name: p.name,
    nodes: { allowed_allocation: '', configured: p.nodes.map((n) => n.name).join(','), total: p.nodes.length },
    cpus: { task_binding: taskBinding4x(minor), total: cpus },
    tres: { billing_weights: '', configured: partitionTres(p) },
    partition: partitionState4x(minor),
    ...partitionConfig4x(minor, isDefault),
  };
}

function coresOf(r: FakeReservation): number {
  return r.nodes.reduce((a, n) => a + n.sockets * n.coresPerSocket, 0);
}

/** The planner of a version: a supplied one, else the built-in one; throws when there is none. */
export function plannerFor(version: RenderVersion, renderers: Renderers | undefined): BodyPlanner {
  const supplied = renderers?.[version];
  if (supplied !== undefined) return supplied;
  if (version === 'v0.0.38') throw new Error(`no renderer for ${version}: supply one in renderers`);
  return (view, endpoint, opts) => plan4x(view, version, endpoint, opts);
}

/** `{"a":1}` → `"a":1`, for splicing members around a streamed array. */
function members(obj: Readonly<Record<string, unknown>>): string {
  const s = JSON.stringify(obj);
  return s.length > 2 ? s.slice(1, -1) : '';
}

/** The body as JSON text pieces: envelope head, then one piece per element, then the tail. */
export function* bodyParts(
  view: ClusterView,
  version: RenderVersion,
  endpoint: Endpoint,
  opts: RenderOptions = {},
): Generator<string> {
  const p = plannerFor(version, opts.renderers)(view, endpoint, opts);
  if (opts.pretty === true) {
    yield* prettyParts(p);
    return;
  }
  if (p.kind === 'object') {
    yield JSON.stringify(p.body);
    return;
  }
  const head = members(p.head);
  yield `{${head}${head === '' ? '' : ','}"${p.key}":[`;
  let first = true;
  for (const item of p.items) {
    yield (first ? '' : ',') + JSON.stringify(p.render(item));
    first = false;
  }
  const tail = members(p.tail);
  yield `]${tail === '' ? '' : ','}${tail}}`;
}

/** JSON.stringify at nesting `depth` in slurmrestd's style. */
function pretty(value: unknown, depth: number): string {
  return JSON.stringify(value, null, 2)
    .replace(/\//g, '\\/')
    .replace(/\n/g, `\n${'  '.repeat(depth)}`);
}

function* prettyParts(p: BodyPlan): Generator<string> {
  if (p.kind === 'object') {
    yield pretty(p.body, 0);
    return;
  }
  const member = (k: string, v: unknown) => `  ${JSON.stringify(k)}: ${pretty(v, 1)}`;
  const defined = (m: Readonly<Record<string, unknown>>) => Object.entries(m).filter(([, v]) => v !== undefined);
  const head = defined(p.head).map(([k, v]) => `${member(k, v)},\n`);
  yield `{\n${head.join('')}  ${JSON.stringify(p.key)}: [`;
  let first = true;
  for (const item of p.items) {
    yield `${first ? '' : ','}\n    ${pretty(p.render(item), 2)}`;
    first = false;
  }
  const tail = defined(p.tail).map(([k, v]) => `,\n${member(k, v)}`);
  yield `${first ? '' : '\n  '}]${tail.join('')}\n}`;
}

function viewOf(source: FakeCluster | ClusterView): ClusterView {
  return 'view' in source && typeof source.view === 'function' ? source.view() : (source as ClusterView);
}

/**
 * The body in chunks of at least `chunkChars` characters (the last may be shorter). The snapshot
 * is taken on the first `next()`, so the cluster may move on while a long body streams.
 */
export async function* renderChunks(
  source: FakeCluster | ClusterView,
  version: RenderVersion,
  endpoint: Endpoint,
  opts: RenderOptions = {},
): AsyncGenerator<string> {
  const min = opts.chunkChars ?? DEFAULT_CHUNK_CHARS;
  let buf = '';
  for (const part of bodyParts(viewOf(source), version, endpoint, opts)) {
    buf += part;
    if (buf.length >= min) {
      yield buf;
      buf = '';
    }
  }
  if (buf !== '') yield buf;
}

/** The whole body as one string: for small clusters (tests, fixtures), never for 100k jobs. */
export function renderText(
  source: FakeCluster | ClusterView,
  version: RenderVersion,
  endpoint: Endpoint,
  opts: RenderOptions = {},
): string {
  return [...bodyParts(viewOf(source), version, endpoint, opts)].join('');
}

/** Newest first, like the agent's negotiation expects to find them. */
function newestFirst(versions: readonly RenderVersion[]): RenderVersion[] {
  return [...new Set(versions)].sort((a, b) => minorOf(b) - minorOf(a));
}

/**
 * A small `GET /openapi/v3` document: its `paths` are exactly the endpoints served, under each
 * served version's prefix (22.05 printed them without the trailing slash).
 */
export function openapiDocument(
  versions: readonly RenderVersion[],
  opts: { readonly slurmdbd?: boolean; readonly release?: string } = {},
): Record<string, unknown> {
  const sorted = newestFirst(versions);
  const newest = sorted[0];
  const release = opts.release ?? (newest !== undefined ? DEFAULT_RELEASES[newest] : '');
  const paths: Record<string, unknown> = {};
  const get = (summary: string) => ({ get: { summary, responses: { '200': { description: summary } } } });
  for (const v of sorted) {
    const slash = v === 'v0.0.38' ? '' : '/';
    paths[`/slurm/${v}/diag${slash}`] = get('get diagnostics');
    paths[`/slurm/${v}/jobs${slash}`] = get('get list of jobs');
    paths[`/slurm/${v}/nodes${slash}`] = get('get node(s) info');
    paths[`/slurm/${v}/partitions${slash}`] = get('get all partition info');
    paths[`/slurm/${v}/licenses${slash}`] = get('get all Slurm tracked license info');
    paths[`/slurm/${v}/reservations${slash}`] = get('get all reservation info');
    if (v !== 'v0.0.38') paths[`/slurm/${v}/shares`] = get('get fairshare info');
    if (!(opts.slurmdbd ?? true)) continue;
    paths[`/slurmdb/${v}/jobs${slash}`] = get('get job list');
    if (v === 'v0.0.38') continue;
    paths[`/slurmdb/${v}/qos/`] = get('get QOS list');
    paths[`/slurmdb/${v}/associations/`] = get('get association list');
  }
  const plugins = (opts.slurmdbd ?? true) ? 'openapi/slurmdbd&openapi/slurmctld' : 'openapi/slurmctld';
  return {
    openapi: '3.0.3',
    info: { title: 'Slurm REST API', version: `Slurm-${release}&${plugins}` },
    servers: [{ url: '/' }],
    paths,
  };
}
