/**
 * How to reach one Kubernetes API server, and as whom: in-cluster (the pod's service-account
 * token and CA; the caller passes the API server URL, built by the CLI from
 * KUBERNETES_SERVICE_HOST/PORT) or a kubeconfig file (JSON or YAML; token, token file or client
 * certificate users; exec plugins are not supported). Read again at every use, so rotated
 * tokens are picked up.
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { registerSecret } from '../../log.js';
import { AuthError, redact } from '../http/failure.js';
import type { TlsOptions } from '../http/transport.js';
import { field, str } from '../api/json/read.js';

export const DEFAULT_SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export type KubernetesAccess =
  | { readonly kind: 'in-cluster'; readonly apiServer: string; readonly serviceAccountDir?: string }
  | { readonly kind: 'kubeconfig'; readonly path: string; readonly context?: string };

/** How to reach and authenticate to one API server. Holds secrets: never log it. */
export interface KubeEndpoint {
  readonly server: string;
  readonly tls: TlsOptions;
  readonly bearerToken?: string;
  readonly namespace?: string;
}

/** The request headers of an endpoint; its token is registered for redaction from every log line first. */
export function authHeaders(endpoint: KubeEndpoint): Record<string, string> {
  registerSecret(endpoint.bearerToken);
  return endpoint.bearerToken !== undefined ? { authorization: `Bearer ${endpoint.bearerToken}` } : {};
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
