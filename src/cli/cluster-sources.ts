/**
 * What the cluster agent reaches besides slurmrestd itself, built from settings cluster.ts has
 * read: the source of slurmrestd's tokens (none, a token, a token file, a signing key, scontrol,
 * or the key in a Kubernetes Secret) and the topology sub-collector's Kubernetes lists, both
 * reaching the Kubernetes API through a kubeconfig or the pod's own service account.
 */
import {
  keyFileSigner,
  noAuth,
  scontrolToken,
  staticToken,
  tokenFile,
  type TokenSource,
} from '../cluster/api/http/auth.js';
import type { KubernetesAccess } from '../cluster/kubernetes/access.js';
import { kubernetesSecretSigner } from '../cluster/kubernetes/secret-key.js';
import { kubernetesTopologySource, type TopologySource } from '../cluster/kubernetes/topology-source.js';
import type { OptionalSubCollector } from '../cluster/snapshot.js';
import type { Logger } from '../log.js';
import { ConfigError } from './common.js';
import type { Env } from './otel.js';

export const TOKEN_SOURCES = ['auto', 'none', 'static', 'file', 'jwt-key', 'scontrol', 'kubernetes'] as const;
export type TokenSourceName = (typeof TOKEN_SOURCES)[number];

/** The settings the sources are built from (a part of the cluster command's flags). */
export interface SourceFlags {
  clusterName: string;
  clusterNamespace: string;
  slurmApiServer: string;
  requestTimeout: number;
  tokenSource: TokenSourceName;
  token?: string;
  tokenFile?: string;
  slurmUserName?: string;
  jwtKeyFile?: string;
  jwtUser: string;
  jwtLifetime: number;
  scontrolPath: string;
  kubeconfigPath?: string;
  optionalCollectors: OptionalSubCollector[];
}

/** `auto` picks the first configured: token, token file, key file, Kubernetes (in-cluster or kubeconfig); else none. */
export function chooseTokenSource(f: SourceFlags, env: Env): Exclude<TokenSourceName, 'auto'> {
  if (f.tokenSource !== 'auto') return f.tokenSource;
  if (f.token) return 'static';
  if (f.tokenFile) return 'file';
  if (f.jwtKeyFile) return 'jwt-key';
  if (f.kubeconfigPath || env.KUBERNETES_SERVICE_HOST) return 'kubernetes';
  return 'none';
}

export function buildTokenSource(f: SourceFlags, env: Env, logger: Logger): TokenSource {
  const lifetimeSec = Math.round(f.jwtLifetime / 1000);
  const need = (v: string | undefined, flag: string): string => {
    if (!v) throw new ConfigError(`token source ${f.tokenSource} needs ${flag}`);
    return v;
  };
  switch (chooseTokenSource(f, env)) {
    case 'none':
      if (!f.slurmApiServer.startsWith('unix:'))
        logger.warn('no Slurm token configured: slurmrestd with auth/jwt will answer 401');
      return noAuth();
    case 'static':
      return staticToken({ token: need(f.token, '--token or SLURM_EXPORTER_TOKEN'), userName: f.slurmUserName });
    case 'file':
      return tokenFile({ path: need(f.tokenFile, '--token-file'), userName: f.slurmUserName });
    case 'jwt-key':
      return keyFileSigner({ keyFile: need(f.jwtKeyFile, '--jwt-key-file'), user: f.jwtUser, lifetimeSec });
    case 'scontrol':
      return scontrolToken({ user: f.jwtUser, lifespanSec: lifetimeSec, command: f.scontrolPath });
    case 'kubernetes':
      return kubernetesSecretSigner({
        access: kubernetesAccess(f, env, 'token source kubernetes'),
        namespace: f.clusterNamespace,
        clusterName: f.clusterName,
        user: f.jwtUser,
        lifetimeSec,
      });
  }
}

/**
 * Worker placement (NodeSet, NVLink instance group) from the Kubernetes API, when the operator
 * chose the topology sub-collector: through a kubeconfig, or the pod's own service account.
 */
export function topologySource(f: SourceFlags, env: Env): TopologySource | undefined {
  if (!f.optionalCollectors.includes('topology')) return undefined;
  return kubernetesTopologySource({
    access: kubernetesAccess(f, env, 'optional collector topology'),
    namespace: f.clusterNamespace,
    clusterName: f.clusterName,
    requestTimeoutMs: f.requestTimeout,
  });
}

/** The Kubernetes API `user` (what needs it, for the error) reaches: the kubeconfig, else the pod's own. */
export function kubernetesAccess(f: Pick<SourceFlags, 'kubeconfigPath'>, env: Env, user: string): KubernetesAccess {
  if (f.kubeconfigPath) return { kind: 'kubeconfig', path: f.kubeconfigPath };
  return { kind: 'in-cluster', apiServer: inClusterApiServer(env, user) };
}

function inClusterApiServer(env: Env, user: string): string {
  const host = env.KUBERNETES_SERVICE_HOST;
  if (!host)
    throw new ConfigError(`${user} needs --kubeconfig-path or an in-cluster environment (KUBERNETES_SERVICE_HOST)`);
  const port = env.KUBERNETES_SERVICE_PORT || '443';
  return `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
