/**
 * The signing key from a Kubernetes Secret (Soperator keeps it in `<cluster>-rest-jwt-key`, data
 * key `jwt_hs256.key`), read through the Kubernetes API and used like a key file: tokens are
 * signed here, so nothing has to mount the key into the agent's pod. The Secret is fetched again
 * after invalidate(), so a rotated key is picked up at the first rejected token. Access: access.ts.
 */
import { signingTokenSource, type SignerOptions, type TokenSource } from '../api/http/auth.js';
import { field, str } from '../api/json/read.js';
import { AuthError, redact } from '../http/failure.js';
import { HttpStatusError, HttpTransport, TransportError } from '../http/transport.js';
import { authHeaders, resolveAccess, type KubeEndpoint, type KubernetesAccess } from './access.js';

export const DEFAULT_SECRET_DATA_KEY = 'jwt_hs256.key';
const SECRET_BODY_LIMIT = 1024 * 1024;

export interface KubernetesSecretKeyOptions extends SignerOptions {
  readonly access: KubernetesAccess;
  /** Default: the service account's namespace (in-cluster), the context's (kubeconfig), else `default`. */
  readonly namespace?: string;
  /** The Slurm cluster name; the Secret is `<clusterName>-rest-jwt-key` unless secretName is given. */
  readonly clusterName?: string;
  readonly secretName?: string;
  readonly dataKey?: string;
  readonly requestTimeoutMs?: number;
}

export function secretNameFor(clusterName: string): string {
  return `${clusterName}-rest-jwt-key`;
}

export function kubernetesSecretSigner(opts: KubernetesSecretKeyOptions): TokenSource {
  const name = opts.secretName ?? (opts.clusterName !== undefined ? secretNameFor(opts.clusterName) : undefined);
  if (name === undefined || name === '')
    throw new AuthError('Kubernetes Secret key source needs clusterName or secretName');
  const dataKey = opts.dataKey ?? DEFAULT_SECRET_DATA_KEY;
  const load = async (): Promise<Uint8Array> => {
    const endpoint = await resolveAccess(opts.access);
    const namespace = opts.namespace ?? endpoint.namespace ?? 'default';
    return fetchSecretKey(endpoint, namespace, name, dataKey, opts.requestTimeoutMs ?? 10_000);
  };
  const where = `${opts.namespace !== undefined ? `${opts.namespace}/` : ''}${name}`;
  return signingTokenSource(load, `key from Kubernetes Secret ${where}[${dataKey}] via ${opts.access.kind}`, opts);
}

/** GETs the Secret and returns the decoded bytes of one data key. */
export async function fetchSecretKey(
  endpoint: KubeEndpoint,
  namespace: string,
  name: string,
  dataKey: string,
  timeoutMs: number,
): Promise<Uint8Array> {
  const transport = new HttpTransport({
    server: endpoint.server,
    tls: endpoint.tls,
    timeoutMs,
    attempts: 2,
    baseDelayMs: 200,
    maxResponseBytes: SECRET_BODY_LIMIT,
  });
  const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`;
  let text: string;
  try {
    text = await transport.getText(path, { headers: authHeaders(endpoint) });
  } catch (err) {
    throw secretFetchError(err, `${namespace}/${name}`);
  } finally {
    transport.close();
  }
  return decodeSecretData(text, dataKey, `${namespace}/${name}`);
}

function secretFetchError(err: unknown, what: string): AuthError {
  if (err instanceof HttpStatusError) {
    const hint =
      err.status === 401
        ? ' (credentials rejected)'
        : err.status === 403
          ? ' (not allowed: the account needs get on secrets)'
          : err.status === 404
            ? ' (no such Secret)'
            : '';
    return new AuthError(`Kubernetes API: reading Secret ${what} answered HTTP ${err.status}${hint}`);
  }
  if (err instanceof TransportError)
    return new AuthError(`Kubernetes API: reading Secret ${what} failed: ${err.message}`);
  return new AuthError(
    `Kubernetes API: reading Secret ${what} failed: ${redact(String((err as Error)?.message ?? err))}`,
  );
}

export function decodeSecretData(text: string, dataKey: string, what: string): Uint8Array {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new AuthError(`Kubernetes API: Secret ${what} response is not JSON`);
  }
  const b64 = str(field(field(doc, 'data'), dataKey));
  if (b64 === undefined) throw new AuthError(`Kubernetes Secret ${what} has no data key "${dataKey}"`);
  const compact = b64.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact))
    throw new AuthError(`Kubernetes Secret ${what}: data "${dataKey}" is not base64`);
  const bytes = Buffer.from(compact, 'base64');
  if (bytes.length === 0) throw new AuthError(`Kubernetes Secret ${what}: data "${dataKey}" is empty`);
  return new Uint8Array(bytes);
}
