/** Starting the real node agent on loopback for tests. */
import { silentLogger } from '../../src/log.js';
import { startNodeAgent, type NodeAgent, type NodeAgentOptions } from '../../src/node/agent.js';
import type { Roots } from '../../src/node/roots.js';

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
