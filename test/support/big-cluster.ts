/** Large fake clusters for benchmarks and the tests of streaming at scale; not shipped. */
import { FakeCluster, type PartitionSpec } from '../../src/demo/fake-cluster.js';

export interface BigClusterOptions {
  readonly nodes: number;
  readonly jobs: number;
  readonly seed?: number;
  readonly startMs?: number;
}

/**
 * A large cluster for benchmarks: a quarter GPU nodes, the rest CPU nodes, `jobs` jobs of which
 * most run (as many as fit), some wait and a few have just finished.
 */
export function bigCluster(opts: BigClusterOptions): FakeCluster {
  const gpuNodes = Math.max(1, Math.floor(opts.nodes / 4));
  const partitions: PartitionSpec[] = [{ name: 'gpu', nodes: gpuNodes, gpusPerNode: 8 }];
  if (opts.nodes > gpuNodes) partitions.push({ name: 'cpu', nodes: opts.nodes - gpuNodes });
  const cluster = new FakeCluster({
    partitions,
    seed: opts.seed ?? 1,
    workload: 'none',
    ...(opts.startMs !== undefined ? { startMs: opts.startMs } : {}),
  });
  cluster.populate(opts.jobs);
  return cluster;
}
