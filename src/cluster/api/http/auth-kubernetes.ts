/**
 * The signing key from a Kubernetes Secret (Soperator keeps it in `<cluster>-rest-jwt-key`, data
 * key `jwt_hs256.key`), read through the Kubernetes API and used like a key file: tokens are
 * signed here, so nothing has to mount the key into the agent's pod. The Secret is fetched again
 * after invalidate(), so a rotated key is picked up at the first rejected token.
 *
 * Access is either in-cluster (the pod's service-account token and CA; the caller passes the API
 * server URL, built by the CLI from KUBERNETES_SERVICE_HOST/PORT) or a kubeconfig file (JSON or
 * YAML; token, token file or client certificate users; exec plugins are not supported).
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { registerSecret } from '../../../log.js';
import { AuthError, redact, signingTokenSource, type SignerOptions, type TokenSource } from './auth.js';
import { field, str } from '../json/read.js';
import { HttpTransport, SlurmHttpError, TransportError, type TlsOptions } from './transport.js';

export const DEFAULT_SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
export const DEFAULT_SECRET_DATA_KEY = 'jwt_hs256.key';
const SECRET_BODY_LIMIT = 1024 * 1024;

export type KubernetesAccess =
  | { readonly kind: 'in-cluster'; readonly apiServer: string; readonly serviceAccountDir?: string }
  | { readonly kind: 'kubeconfig'; readonly path: string; readonly context?: string };

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

/** How to reach and authenticate to one API server. Holds secrets: never log it. */
export interface KubeEndpoint {
  readonly server: string;
  readonly tls: TlsOptions;
  readonly bearerToken?: string;
  readonly namespace?: string;
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

export function resolveAccess(access: KubernetesAccess): Promise<KubeEndpoint> {
  return access.kind === 'in-cluster'
    ? inClusterEndpoint(access.apiServer, access.serviceAccountDir)
    : kubeconfigEndpoint(access.path, access.context);
}

/** Re-read at every fetch: projected service-account tokens are rotated by the kubelet. */
export async function inClusterEndpoint(apiServer: string, dir = DEFAULT_SERVICE_ACCOUNT_DIR): Promise<KubeEndpoint> {
  const token = (await readRequired(join(dir, 'token'), 'service-account token')).toString('utf8').trim();
  const ca = await readOptional(join(dir, 'ca.crt'));
  const ns = (await readOptional(join(dir, 'namespace')))?.toString('utf8').trim();
  return {
    server: apiServer,
    tls: ca !== undefined ? { ca } : {},
    bearerToken: token,
    ...(ns ? { namespace: ns } : {}),
  };
}

/** Reads the current (or named) context of a kubeconfig file. JSON is valid YAML, so one parser reads both. */
export async function kubeconfigEndpoint(path: string, contextName?: string): Promise<KubeEndpoint> {
  const text = (await readRequired(path, 'kubeconfig')).toString('utf8');
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new AuthError(`kubeconfig ${path} is not valid YAML/JSON: ${redact((err as Error).message).slice(0, 200)}`);
  }
  const wanted = contextName ?? str(field(doc, 'current-context'));
  if (wanted === undefined) throw new AuthError(`kubeconfig ${path} has no current-context (pass a context)`);
  const context = named(doc, 'contexts', wanted, 'context', path);
  const cluster = named(doc, 'clusters', str(field(context, 'cluster')) ?? '', 'cluster', path);
  const user = named(doc, 'users', str(field(context, 'user')) ?? '', 'user', path);
  const server = str(field(cluster, 'server'));
  if (server === undefined) throw new AuthError(`kubeconfig ${path}: cluster of context ${wanted} has no server`);
  const base = dirname(path);
  const tls = {
    ...(await pem(cluster, 'certificate-authority', base, 'ca')),
    ...(await pem(user, 'client-certificate', base, 'cert')),
    ...(await pem(user, 'client-key', base, 'key')),
    ...(field(cluster, 'insecure-skip-tls-verify') === true ? { rejectUnauthorized: false } : {}),
    ...(str(field(cluster, 'tls-server-name')) !== undefined
      ? { servername: str(field(cluster, 'tls-server-name')) as string }
      : {}),
  };
  const bearerToken = await userToken(user, base, path);
  const namespace = str(field(context, 'namespace'));
  return { server, tls, ...(bearerToken !== undefined ? { bearerToken } : {}), ...(namespace ? { namespace } : {}) };
}

async function userToken(user: unknown, base: string, path: string): Promise<string | undefined> {
  const inline = str(field(user, 'token'));
  if (inline !== undefined) return inline.trim();
  const file = str(field(user, 'tokenFile'));
  if (file !== undefined)
    return (await readRequired(resolve(base, file), 'kubeconfig tokenFile')).toString('utf8').trim();
  if (field(user, 'exec') !== undefined || field(user, 'auth-provider') !== undefined) {
    throw new AuthError(
      `kubeconfig ${path}: exec and auth-provider users are not supported (use a token, tokenFile or client certificate)`,
    );
  }
  return undefined;
}

/** `<name>-data` (base64) or `<name>` (a path relative to the kubeconfig). */
async function pem(
  section: unknown,
  name: string,
  base: string,
  as: 'ca' | 'cert' | 'key',
): Promise<Partial<TlsOptions>> {
  const data = str(field(section, `${name}-data`));
  if (data !== undefined) return { [as]: Buffer.from(data, 'base64') };
  const file = str(field(section, name));
  if (file !== undefined) return { [as]: await readRequired(resolve(base, file), `kubeconfig ${name}`) };
  return {};
}

function named(doc: unknown, list: string, name: string, member: string, path: string): unknown {
  const entries = field(doc, list);
  const hit = Array.isArray(entries) ? entries.find((e) => field(e, 'name') === name) : undefined;
  if (hit === undefined) throw new AuthError(`kubeconfig ${path}: no ${list.slice(0, -1)} named "${name}"`);
  return field(hit, member) ?? {};
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
  registerSecret(endpoint.bearerToken);
  const headers: Record<string, string> =
    endpoint.bearerToken !== undefined ? { authorization: `Bearer ${endpoint.bearerToken}` } : {};
  let text: string;
  try {
    text = await transport.getText(path, { headers });
  } catch (err) {
    throw secretFetchError(err, `${namespace}/${name}`);
  } finally {
    transport.close();
  }
  return decodeSecretData(text, dataKey, `${namespace}/${name}`);
}

function secretFetchError(err: unknown, what: string): AuthError {
  if (err instanceof SlurmHttpError) {
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

function resolve(base: string, p: string): string {
  return isAbsolute(p) ? p : join(base, p);
}

async function readRequired(path: string, what: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (err) {
    throw new AuthError(`cannot read ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

async function readOptional(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch {
    return undefined;
  }
}
