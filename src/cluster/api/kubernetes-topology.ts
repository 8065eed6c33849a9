/**
 * Where each Slurm worker runs on Soperator: the worker pods of the cluster
 * (`app.kubernetes.io/instance=<cluster>`, `slurm.nebius.ai/worker=true`; a pod is named after
 * its Slurm node) and the Kubernetes Nodes they are scheduled on, whose labels say the NodeSet
 * (`slurm.nebius.ai/nodeset-name`) and NVLink instance group
 * (`topology.nebius.com/nvl-instance-group-id`). Two list requests per refresh; only Nodes that
 * carry the NodeSet label count, as Soperator's exporter watches only those.
 *
 * The source is on wherever a Kubernetes API is at hand, a pod's service account included, and
 * many such accounts may not list pods and Nodes: a refusal is counted and logged once, then the
 * API is asked again only after DENIED_RETRY_MS, not every cycle; meanwhile the last topology read
 * stands (or none, absent like a missing endpoint).
 */
import type { NodeTopology } from '../model.js';
import { resolveAccess, type KubeEndpoint, type KubernetesAccess } from './http/auth-kubernetes.js';
import { AuthError } from './http/auth.js';
import { SlurmCallError, type FailureKind } from './failures.js';
import { field, str } from './json/read.js';
import {
  AbortedError,
  HttpTransport,
  NetworkError,
  SlurmHttpError,
  TimeoutError,
  TooLargeError,
} from './http/transport.js';
import { registerSecret } from '../../log.js';

export const NODESET_LABEL = 'slurm.nebius.ai/nodeset-name';
export const NVLINK_GROUP_LABEL = 'topology.nebius.com/nvl-instance-group-id';
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

export type TopologySource = (signal: AbortSignal) => Promise<ReadonlyMap<string, NodeTopology>>;

/** Slurm node name → its topology, for every worker pod scheduled on a labelled Kubernetes Node. */
export function kubernetesTopologySource(opts: TopologySourceOptions): TopologySource {
  const now = opts.now ?? Date.now;
  let deniedUntilMs = -Infinity;
  let lastGood: ReadonlyMap<string, NodeTopology> | undefined;
  const ask = askTopology(opts);
  return async (signal) => {
    if (now() < deniedUntilMs) {
      if (lastGood) return lastGood;
      throw new SlurmCallError({
        kind: 'absent',
        absence: 'known',
        message: 'Kubernetes API: listing pods and nodes was refused; asked again later',
        errors: [],
      });
    }
    try {
      return (lastGood = await ask(signal));
    } catch (err) {
      if (err instanceof SlurmCallError && err.failure.kind === 'auth') deniedUntilMs = now() + DENIED_RETRY_MS;
      throw err;
    }
  };
}

function askTopology(opts: TopologySourceOptions): TopologySource {
  return async (signal) => {
    const endpoint = await resolveAccess(opts.access);
    const namespace = opts.namespace ?? endpoint.namespace ?? 'default';
    const transport = new HttpTransport({
      server: endpoint.server,
      tls: endpoint.tls,
      timeoutMs: opts.requestTimeoutMs ?? 10_000,
      attempts: 2,
      baseDelayMs: 200,
      maxResponseBytes: LIST_BODY_LIMIT,
    });
    try {
      const workers = `app.kubernetes.io/instance=${opts.clusterName},slurm.nebius.ai/worker=true`;
      const [pods, nodes] = await Promise.all([
        list(transport, endpoint, `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`, workers, signal),
        list(transport, endpoint, '/api/v1/nodes', NODESET_LABEL, signal),
      ]);
      return topologies(pods, nodes);
    } finally {
      transport.close();
    }
  };
}

async function list(
  transport: HttpTransport,
  endpoint: KubeEndpoint,
  path: string,
  labelSelector: string,
  signal: AbortSignal,
): Promise<unknown[]> {
  registerSecret(endpoint.bearerToken);
  const headers: Record<string, string> =
    endpoint.bearerToken !== undefined ? { authorization: `Bearer ${endpoint.bearerToken}` } : {};
  let text: string;
  try {
    text = await transport.getText(`${path}?labelSelector=${encodeURIComponent(labelSelector)}`, { headers, signal });
  } catch (err) {
    throw listFailure(err, path);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new SlurmCallError({ kind: 'decode', message: `Kubernetes API: ${path} is not JSON`, errors: [] });
  }
  const items = field(doc, 'items');
  if (!Array.isArray(items))
    throw new SlurmCallError({ kind: 'decode', message: `Kubernetes API: ${path} has no items list`, errors: [] });
  return items;
}

/** A failed list as the sub-collector counts it (auth, timeout, network, http, ...). */
function listFailure(err: unknown, path: string): SlurmCallError {
  const what = `Kubernetes API: GET ${path}`;
  const fail = (kind: FailureKind, message: string, status?: number): SlurmCallError =>
    new SlurmCallError({ kind, message, errors: [], ...(status !== undefined ? { status } : {}) });
  if (err instanceof AuthError) return fail('auth', `${what}: ${err.message}`);
  if (err instanceof SlurmHttpError) {
    const denied = err.status === 401 || err.status === 403;
    const hint = denied ? ' (the account needs list on pods in its namespace and on nodes)' : '';
    return fail(denied ? 'auth' : 'http', `${what} answered HTTP ${err.status}${hint}`, err.status);
  }
  if (err instanceof TimeoutError) return fail('timeout', `${what}: ${err.message}`);
  if (err instanceof TooLargeError) return fail('too_large', `${what}: ${err.message}`);
  if (err instanceof NetworkError) return fail('network', `${what}: ${err.message}`);
  if (err instanceof AbortedError) return fail('aborted', `${what}: ${err.message}`);
  return fail('internal', `${what}: ${err instanceof Error ? err.message : String(err)}`);
}

/** Joins pods (name, spec.nodeName) with Nodes (name, labels); pods not yet scheduled are left out. */
export function topologies(pods: readonly unknown[], nodes: readonly unknown[]): Map<string, NodeTopology> {
  const byNode = new Map<string, NodeTopology>();
  for (const n of nodes) {
    const name = str(field(field(n, 'metadata'), 'name'));
    const labels = field(field(n, 'metadata'), 'labels');
    if (name === undefined) continue;
    byNode.set(name, {
      nodesetName: str(field(labels, NODESET_LABEL)) ?? '',
      nvlinkInstanceGroup: str(field(labels, NVLINK_GROUP_LABEL)) ?? '',
    });
  }
  const out = new Map<string, NodeTopology>();
  for (const p of pods) {
    const pod = str(field(field(p, 'metadata'), 'name'));
    const node = str(field(field(p, 'spec'), 'nodeName'));
    const topology = node === undefined ? undefined : byNode.get(node);
    if (pod !== undefined && topology !== undefined) out.set(pod, topology);
  }
  return out;
}
