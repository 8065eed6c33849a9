/**
 * The topology sub-collector's source (Soperator): two list requests per refresh to the
 * Kubernetes API, the cluster's worker pods (`app.kubernetes.io/instance=<cluster>`,
 * `slurm.nebius.ai/worker=true`) in its namespace and the Nodes carrying an NVLink instance group
 * label, joined by topology.ts. Switched on by the operator (optional collector `topology`): the
 * account needs `list` on pods in that namespace and on nodes.
 *
 * Both lists ask for `resourceVersion=0`, which the API server answers from its watch cache
 * instead of a quorum read of etcd, and go one after the other over one kept-alive connection,
 * so a refresh every collection interval costs the API server two cached lists on one socket.
 * Each list is decoded item by item as it streams in (topology.ts keeps a few bounded fields of
 * each), so a large list costs the agent one item at a time, not the body.
 *
 * A refusal (401, 403) is counted and logged, then the API is asked again only after
 * DENIED_RETRY_MS, not every cycle; meanwhile the last topology read stands (or none, absent like
 * a missing endpoint).
 */
import { CallError, transportFailureKind, type FailureKind } from '../http/failure.js';
import { HttpStatusError, HttpTransport } from '../http/transport.js';
import { JsonArraySplitter, JsonStreamError } from '../../json/splitter.js';
import { authHeaders, resolveAccess, type KubeEndpoint, type KubernetesAccess } from './access.js';
import { groupNode, join, NVLINK_GROUP_LABEL, workerPod, type TopologyRead } from './topology.js';

const LIST_BODY_LIMIT = 256 * 1024 * 1024;
/** How long a refused list (401, 403) keeps the source from asking again. */
export const DENIED_RETRY_MS = 10 * 60_000;

export interface TopologySourceOptions {
  readonly access: KubernetesAccess;
  /** Namespace of the worker pods; default the service account's or the context's, else `default`. */
  readonly namespace?: string;
  readonly clusterName: string;
  readonly requestTimeoutMs?: number;
  /** The clock of the retry after a refusal (default Date.now). */
  readonly now?: () => number;
}

export interface TopologySource {
  /** Both lists, joined: Slurm node name → topology, with how many values were bounded. */
  read(signal: AbortSignal): Promise<TopologyRead>;
  /** Closes the connection kept to the API server. */
  close(): void;
}

export function kubernetesTopologySource(opts: TopologySourceOptions): TopologySource {
  const now = opts.now ?? Date.now;
  const connection = new Connection(opts.requestTimeoutMs ?? 10_000);
  let deniedUntilMs = -Infinity;
  let lastGood: TopologyRead | undefined;
  return {
    read: async (signal) => {
      if (now() < deniedUntilMs) {
        // Nothing was read: the values kept were counted when they were.
        if (lastGood) return { byNode: lastGood.byNode, adjusted: 0 };
        throw new CallError({
          kind: 'absent',
          absence: 'known',
          message: 'Kubernetes API: listing pods and nodes was refused; asked again later',
          errors: [],
        });
      }
      try {
        return (lastGood = await readTopology(opts, connection, signal));
      } catch (err) {
        if (err instanceof CallError && err.failure.kind === 'auth') deniedUntilMs = now() + DENIED_RETRY_MS;
        throw err;
      }
    },
    close: () => connection.close(),
  };
}

/**
 * One transport (one keep-alive socket) for as long as the endpoint stays the same; a changed
 * server or TLS material (an edited kubeconfig) gets a new one.
 */
class Connection {
  private transport: HttpTransport | undefined;
  private key = '';

  constructor(private readonly timeoutMs: number) {}

  for(endpoint: KubeEndpoint): HttpTransport {
    const key = endpointKey(endpoint);
    if (this.transport === undefined || key !== this.key) {
      this.transport?.close();
      this.key = key;
      this.transport = new HttpTransport({
        server: endpoint.server,
        tls: endpoint.tls,
        timeoutMs: this.timeoutMs,
        attempts: 2,
        baseDelayMs: 200,
        maxResponseBytes: LIST_BODY_LIMIT,
        maxSockets: 1,
      });
    }
    return this.transport;
  }

  close(): void {
    this.transport?.close();
    this.transport = undefined;
  }
}

function endpointKey(e: KubeEndpoint): string {
  const pem = (b: string | Buffer | undefined): string => (b === undefined ? '' : Buffer.from(b).toString('base64'));
  const t = e.tls;
  return [e.server, pem(t.ca), pem(t.cert), pem(t.key), String(t.rejectUnauthorized), t.servername ?? ''].join('|');
}

async function readTopology(
  opts: TopologySourceOptions,
  connection: Connection,
  signal: AbortSignal,
): Promise<TopologyRead> {
  const endpoint = await resolveAccess(opts.access);
  const namespace = opts.namespace ?? endpoint.namespace ?? 'default';
  const transport = connection.for(endpoint);
  const get = <T>(path: string, labelSelector: string, reduce: (item: unknown) => T | undefined) =>
    list(transport, { path, labelSelector, headers: authHeaders(endpoint), signal }, reduce);
  const workers = `app.kubernetes.io/instance=${opts.clusterName},slurm.nebius.ai/worker=true`;
  const pods = await get(`/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`, workers, workerPod);
  const nodes = await get('/api/v1/nodes', NVLINK_GROUP_LABEL, groupNode);
  return join(pods, nodes);
}

interface ListRequest {
  readonly path: string;
  readonly labelSelector: string;
  readonly headers: Record<string, string>;
  readonly signal: AbortSignal;
}

/**
 * The `items` of a list, each parsed alone and reduced at once: neither the body nor a parsed list
 * is ever held whole. (The splitter's member picker is not used: on items with long strings it
 * scans several times slower than JSON.parse of the whole item.)
 */
async function list<T>(
  transport: HttpTransport,
  req: ListRequest,
  reduce: (item: unknown) => T | undefined,
): Promise<T[]> {
  const opts = {
    query: { labelSelector: req.labelSelector, resourceVersion: '0' },
    headers: req.headers,
    signal: req.signal,
  };
  try {
    return await transport.request(req.path, opts, async (res) => {
      // Inside the attempt: a retried request starts over with an empty list.
      const out: T[] = [];
      const splitter = new JsonArraySplitter({
        arrayKey: 'items',
        onElement: (bytes) => {
          const item = reduce(parseItem(bytes, req.path));
          if (item !== undefined) out.push(item);
        },
        onArrayRestart: () => void (out.length = 0),
      });
      for await (const chunk of res.body) splitter.write(chunk);
      if (!splitter.end().arrayFound) throw decodeError(`Kubernetes API: ${req.path} has no items list`);
      return out;
    });
  } catch (err) {
    if (err instanceof CallError) throw err;
    if (err instanceof JsonStreamError) throw decodeError(`Kubernetes API: ${req.path} is not JSON: ${err.message}`);
    throw listFailure(err, req.path);
  }
}

function parseItem(bytes: Buffer, path: string): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    throw decodeError(`Kubernetes API: ${path} has an item that is not JSON`);
  }
}

const decodeError = (message: string): CallError => new CallError({ kind: 'decode', message, errors: [] });

/** A failed list as the sub-collector counts it (auth, timeout, network, http, ...). */
function listFailure(err: unknown, path: string): CallError {
  const what = `Kubernetes API: GET ${path}`;
  const fail = (kind: FailureKind, message: string, status?: number): CallError =>
    new CallError({ kind, message, errors: [], ...(status !== undefined ? { status } : {}) });
  if (err instanceof HttpStatusError) {
    const denied = err.status === 401 || err.status === 403;
    const hint = denied ? ' (the account needs list on pods in its namespace and on nodes)' : '';
    return fail(denied ? 'auth' : 'http', `${what} answered HTTP ${err.status}${hint}`, err.status);
  }
  const message = `${what}: ${err instanceof Error ? err.message : String(err)}`;
  return fail(transportFailureKind(err) ?? 'internal', message);
}
