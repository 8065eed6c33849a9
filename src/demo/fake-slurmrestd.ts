/**
 * A fake slurmrestd over node:http, serving a FakeCluster in the wire shapes of the versions it is
 * told to serve: `/openapi/v3` (also `/openapi.json`, `/openapi`),
 * `/slurm/vX/{nodes,jobs,diag,partitions,licenses,reservations,shares}/` and
 * `/slurmdb/vX/{jobs,qos,associations}/`, with or without the trailing slash. Large bodies are
 * streamed chunk by chunk, waiting for the socket to drain, so a 100k-job answer never sits in
 * memory.
 *
 * Behaviour copied from real slurmrestd where agents depend on it: no token → 401, a wrong token →
 * 500 with an `errors[]` body (what 22.05 does), an unknown path or version → 404, slurmdbd times
 * only as `uts<epoch>`, and from v0.0.45 `GET /nodes?update_time=T` → 304 when nothing changed.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FakeCluster } from './fake-cluster.js';
import { FROM_V0040, isRenderVersion, openapiDocument, plannerFor, renderChunks } from './slurm-render.js';
import type { AccountingQuery, Endpoint, Renderers, RenderVersion } from './slurm-render.js';

export interface FakeSlurmrestdOptions {
  readonly cluster: FakeCluster;
  readonly versions: readonly RenderVersion[];
  readonly host?: string;
  readonly port?: number;
  /** When set, every request must carry it in `X-SLURM-USER-TOKEN` (or `Authorization: Bearer`). */
  readonly token?: string;
  /** Read before each request; the cluster is advanced to it (ms), so a demo can run in real time. */
  readonly clock?: () => number;
  /** Serve `/slurmdb/` paths (default true). */
  readonly slurmdbd?: boolean;
  /** `meta.slurm.release`; default: the release that introduced the newest served version. */
  readonly release?: string;
  /** Endpoints answered with an HTTP 500 (a slurmctld-side failure), to test isolation. */
  readonly failing?: readonly Endpoint[];
  /** Paths answered 404, as by a slurmrestd without their plugin (a trailing slash makes no difference). */
  readonly missing?: readonly string[];
  /** Renderers for versions the package does not render (v0.0.38); see RenderOptions.renderers. */
  readonly renderers?: Renderers;
  /** Print bodies as real slurmrestd does (see RenderOptions.pretty); default compact. */
  readonly pretty?: boolean;
}

export interface FakeSlurmrestd {
  /** `http://host:port`, no trailing slash. */
  readonly url: string;
  /** Requests received per path (query strings left out), including refused ones. */
  readonly requests: ReadonlyMap<string, number>;
  /** Bodies being streamed now, how many of those wait for their client to read, bytes written so far. */
  streaming(): StreamingStats;
  /** Changes the served versions from the next request on (an upgrade, a restricted parser list). */
  setVersions(versions: readonly RenderVersion[]): void;
  /** Changes the paths answered 404 from the next request on (a plugin loaded or unloaded). */
  setMissing(paths: readonly string[]): void;
  close(): Promise<void>;
}

export interface StreamingStats {
  readonly active: number;
  readonly waitingForClient: number;
  readonly bytesWritten: number;
}

const ROUTE = /^\/(slurm|slurmdb)\/(v\d+\.\d+\.\d+)\/([a-z]+)\/?$/;
/** What each daemon's plugin serves here (slurmrestd answers 404 for the rest). */
const SLURMCTLD = new Set<string>(['nodes', 'jobs', 'diag', 'partitions', 'licenses', 'reservations', 'shares']);
const SLURMDBD = new Set<string>(['jobs', 'qos', 'associations']);
const OPENAPI_PATHS: ReadonlySet<string> = new Set(['/openapi/v3', '/openapi.json', '/openapi', '/openapi/v3/']);

interface Route {
  readonly version: RenderVersion;
  readonly endpoint: Endpoint;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, description: string): void {
  sendJson(res, status, {
    errors: [{ description, error_number: status, error: description, source: 'fake-slurmrestd' }],
    warnings: [],
  });
}

/** null when the request may go on; otherwise the status to answer with. */
function authStatus(req: IncomingMessage, token: string | undefined): number | null {
  if (token === undefined) return null;
  const header = req.headers['x-slurm-user-token'];
  const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1];
  const given = typeof header === 'string' ? header : bearer;
  if (given === undefined) return 401;
  return given === token ? null : 500;
}

const withoutSlash = (path: string): string => path.replace(/\/+$/, '');

function route(path: string, served: ReadonlySet<RenderVersion>, slurmdbd: boolean): Route {
  const notFound = new HttpError(404, `Unable to find requested URL ${path}`);
  const m = ROUTE.exec(path);
  if (m === null) throw notFound;
  const [, family, version, what] = m as unknown as [string, 'slurm' | 'slurmdb', string, string];
  if (!isRenderVersion(version) || !served.has(version)) throw notFound;
  if (family === 'slurmdb' ? !slurmdbd || !SLURMDBD.has(what) : !SLURMCTLD.has(what)) throw notFound;
  const endpoint = (family === 'slurmdb' && what === 'jobs' ? 'slurmdb-jobs' : what) as Endpoint;
  if (version === 'v0.0.38' && FROM_V0040.has(endpoint)) throw notFound;
  return { version, endpoint };
}

/** slurmdbd takes `uts<epoch>` (Slurm's parse_time rejects a bare integer). */
function utsTime(params: URLSearchParams, name: string): number | undefined {
  const raw = params.get(name);
  if (raw === null || raw === '') return undefined;
  const m = /^uts(\d+)$/.exec(raw);
  if (m === null) throw new HttpError(400, `Invalid time specification for ${name}: ${raw}`);
  return Number(m[1]);
}

function accountingQuery(params: URLSearchParams): AccountingQuery {
  const cluster = params.get('cluster');
  const startTime = utsTime(params, 'start_time');
  const endTime = utsTime(params, 'end_time');
  return {
    ...(cluster !== null ? { cluster } : {}),
    ...(startTime !== undefined ? { startTime } : {}),
    ...(endTime !== undefined ? { endTime } : {}),
  };
}

/** `update_time` as a bare epoch or `uts<epoch>`. */
function updateTime(params: URLSearchParams): number | undefined {
  const m = /^(?:uts)?(\d+)$/.exec(params.get('update_time') ?? '');
  return m === null ? undefined : Number(m[1]);
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** Writes the chunks as they come, waiting for the socket whenever its buffer is full. */
async function stream(res: ServerResponse, chunks: AsyncIterable<string>, stats: MutableStats): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/json' });
  stats.active++;
  try {
    for await (const chunk of chunks) {
      if (res.destroyed) return;
      stats.bytesWritten += Buffer.byteLength(chunk);
      if (res.write(chunk)) continue;
      stats.waitingForClient++;
      await drained(res).finally(() => stats.waitingForClient--);
    }
    res.end();
  } finally {
    stats.active--;
  }
}

type MutableStats = { -readonly [K in keyof StreamingStats]: StreamingStats[K] };

/** The versions to serve; throws, before anything is served, on one without a renderer. */
function servable(versions: readonly RenderVersion[], renderers: Renderers | undefined): Set<RenderVersion> {
  for (const v of versions) plannerFor(v, renderers);
  return new Set(versions);
}

export async function startFakeSlurmrestd(opts: FakeSlurmrestdOptions): Promise<FakeSlurmrestd> {
  let served = servable(opts.versions, opts.renderers);
  const requests = new Map<string, number>();
  const stats: MutableStats = { active: 0, waitingForClient: 0, bytesWritten: 0 };
  const slurmdbd = opts.slurmdbd ?? true;
  let missing = new Set((opts.missing ?? []).map(withoutSlash));

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://fake');
    requests.set(url.pathname, (requests.get(url.pathname) ?? 0) + 1);
    const auth = authStatus(req, opts.token);
    if (auth === 401) return sendError(res, 401, 'Authentication failure');
    if (auth === 500) return sendError(res, 500, 'Authentication failure: invalid token');
    if (req.method !== 'GET') return sendError(res, 405, `Method ${req.method ?? ''} not allowed`);
    if (opts.clock !== undefined) opts.cluster.advanceTo(opts.clock());
    if (missing.has(withoutSlash(url.pathname)))
      throw new HttpError(404, `Unable to find requested URL ${url.pathname}`);
    if (OPENAPI_PATHS.has(url.pathname)) {
      return sendJson(
        res,
        200,
        openapiDocument([...served], { slurmdbd, ...(opts.release !== undefined ? { release: opts.release } : {}) }),
      );
    }
    const r = route(url.pathname, served, slurmdbd);
    if (opts.failing?.includes(r.endpoint)) return sendError(res, 500, `${r.endpoint}: injected failure`);
    const since = updateTime(url.searchParams);
    if (
      r.endpoint === 'nodes' &&
      r.version === 'v0.0.45' &&
      since !== undefined &&
      opts.cluster.nodesUpdatedAt <= since
    ) {
      res.writeHead(304).end();
      return;
    }
    const query = r.endpoint === 'slurmdb-jobs' ? accountingQuery(url.searchParams) : undefined;
    const renderOpts = {
      ...(opts.release !== undefined ? { release: opts.release } : {}),
      ...(query !== undefined ? { query } : {}),
      ...(opts.renderers !== undefined ? { renderers: opts.renderers } : {}),
      ...(opts.pretty === true ? { pretty: true } : {}),
    };
    await stream(res, renderChunks(opts.cluster, r.version, r.endpoint, renderOpts), stats);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (err instanceof HttpError && !res.headersSent) return sendError(res, err.status, err.message);
      res.destroy(err instanceof Error ? err : new Error(String(err)));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    requests,
    streaming: () => ({ ...stats }),
    setVersions(versions) {
      served = servable(versions, opts.renderers);
    },
    setMissing(paths) {
      missing = new Set(paths.map(withoutSlash));
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
