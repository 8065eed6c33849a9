/** Starting the real agents on loopback for tests. */
import { staticToken } from '../../src/cluster/api/http/auth.js';
import { SlurmClient, type SlurmClientOptions } from '../../src/cluster/api/client.js';
import type { ClusterAgentOptions } from '../../src/cluster/agent.js';
import type { JobSource } from '../../src/cluster/model.js';
import { FakeCluster } from '../../src/demo/fake-cluster.js';
import { startFakeSlurmrestd, type FakeSlurmrestd } from '../../src/demo/fake-slurmrestd.js';
import type { Endpoint, RenderVersion } from '../../src/demo/slurm-render.js';
import { V0038_RENDERERS } from './slurm-render-v0038.js';
import type { OptionalSubCollector } from '../../src/cluster/snapshot.js';
import { silentLogger } from './log.js';
import { startNodeAgent, type NodeAgent, type NodeAgentOptions } from '../../src/node/agent.js';
import type { Roots } from '../../src/node/read/roots.js';
import type { OtlpOptions } from '../../src/telemetry/pipeline.js';

export function nodeAgentOptions(roots: Roots, extra: Partial<NodeAgentOptions> = {}): NodeAgentOptions {
  return {
    collector: { roots, fdRescanIntervalMs: 60_000 },
    collectionIntervalMs: 3_600_000,
    metrics: { host: '127.0.0.1', port: 0 },
    monitoring: { host: '127.0.0.1', port: 0 },
    resource: { serviceName: 'slurm-otel-node', serviceVersion: 'test', hostName: 'node1' },
    logger: silentLogger(),
    ...extra,
  };
}

export function startTestNodeAgent(roots: Roots, extra: Partial<NodeAgentOptions> = {}): Promise<NodeAgent> {
  return startNodeAgent(nodeAgentOptions(roots, extra));
}

/** A fake cluster of 12 nodes, 45 minutes into its workload, behind a fake slurmrestd that wants `token`. */
export async function fakeSlurm(
  versions: readonly RenderVersion[],
  token: string,
  failing?: readonly Endpoint[],
  missing?: readonly string[],
): Promise<{ cluster: FakeCluster; server: FakeSlurmrestd }> {
  const cluster = new FakeCluster({ nodes: 12, seed: 7 });
  cluster.advance(45 * 60_000);
  const server = await startFakeSlurmrestd({
    cluster,
    versions,
    host: '127.0.0.1',
    port: 0,
    token,
    renderers: V0038_RENDERERS,
    ...(failing ? { failing } : {}),
    ...(missing ? { missing } : {}),
  });
  return { cluster, server };
}

export interface TestClusterOptions {
  readonly jobSource?: JobSource;
  /** Optional sub-collectors; default the agent's default. */
  readonly optional?: readonly OptionalSubCollector[];
  readonly accountingLimits?: boolean;
  readonly userAccountMetrics?: boolean;
  readonly otlpUrl?: string;
  /** The bearer token file the push presents (the shipped Collector configs require one). */
  readonly otlpBearerTokenFile?: string;
  /** The client's clock and wait before asking a missing endpoint again. */
  readonly client?: Pick<SlurmClientOptions, 'now' | 'absentRetryMs'>;
}

/** Push settings of a test agent that pushes only when the test flushes; with a bearer token file when given. */
export function testOtlp(url: string, bearerTokenFile?: string): OtlpOptions {
  return {
    url,
    protocol: 'http/protobuf',
    intervalMs: 3_600_000,
    timeoutMs: 5000,
    ...(bearerTokenFile ? { bearerTokenFile } : {}),
  };
}

/** Options for a cluster agent reading the fake slurmrestd on loopback, collecting only when asked. */
export function clusterAgentOptions(
  slurm: { cluster: FakeCluster; server: FakeSlurmrestd },
  token: string,
  o: TestClusterOptions = {},
): ClusterAgentOptions {
  const { cluster, server } = slurm;
  const api = new SlurmClient({
    server: server.url,
    tokenSource: staticToken({ token, userName: 'root' }),
    requestTimeoutMs: 10_000,
    logger: silentLogger(),
    ...o.client,
  });
  return {
    source: {
      api,
      jobSource: o.jobSource ?? 'controller',
      accountingLookbackMs: 24 * 3_600_000,
      clusterName: cluster.clusterName,
      now: () => cluster.now,
      ...(o.optional ? { optional: o.optional } : {}),
      accountingLimits: o.accountingLimits ?? false,
    },
    collectionIntervalMs: 3_600_000,
    maxInflight: 1,
    metrics: { host: '127.0.0.1', port: 0 },
    monitoring: { host: '127.0.0.1', port: 0 },
    resource: { serviceName: 'slurm-otel-cluster', serviceVersion: 'test', hostName: 'test' },
    ...(o.otlpUrl ? { otlp: testOtlp(o.otlpUrl, o.otlpBearerTokenFile) } : {}),
    userAccountMetrics: o.userAccountMetrics ?? false,
    logger: silentLogger(),
    serverLabel: server.url,
    close: () => api.close(),
  };
}
