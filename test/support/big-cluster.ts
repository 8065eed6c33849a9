/** Large fake clusters for benchmarks and the tests of streaming at scale; not shipped. */
import { FakeCluster, MIN_JOB_AGE_SECONDS, type PartitionSpec } from '../../src/demo/fake-cluster.js';

export interface BigClusterOptions {
  readonly nodes: number;
  readonly jobs: number;
  readonly seed?: number;
  readonly startMs?: number;
}

/** How many nodes of its partition a job looks at for room while filling, so a large fill stays linear. */
const POPULATE_WINDOW = 256;

/** A fake cluster that can be filled with many jobs at once, as a busy cluster would look. */
class PopulatedCluster extends FakeCluster {
  /**
   * Submits `count` jobs at once and starts what fits. Each job looks for room within a window of
   * nodes from its partition's cursor; what finds none waits.
   */
  populate(count: number): void {
    const t = Math.floor(this.now / 1000);
    for (let i = 0; i < count; i++) {
      const req = this.randomRequest(false);
      const submit = t - this.rng.int(60, 4 * 3600);
      if (this.rng.chance(0.08)) {
        this.addFinished(req, submit, t - this.rng.int(1, MIN_JOB_AGE_SECONDS - 10));
        continue;
      }
      const job = this.submit(req, submit);
      const nodes = this.findNodes(job, POPULATE_WINDOW);
      // Started at most runSeconds ago, so nothing is overdue at the first tick.
      if (nodes !== undefined) this.startJob(job, nodes, Math.max(submit, t - this.rng.int(0, job.runSeconds - 1)));
    }
    this.schedule(t);
  }
}

/**
 * A large cluster for benchmarks: a quarter GPU nodes, the rest CPU nodes, `jobs` jobs of which
 * most run (as many as fit), some wait and a few have just finished.
 */
export function bigCluster(opts: BigClusterOptions): FakeCluster {
  const gpuNodes = Math.max(1, Math.floor(opts.nodes / 4));
  const partitions: PartitionSpec[] = [{ name: 'gpu', nodes: gpuNodes, gpusPerNode: 8 }];
  if (opts.nodes > gpuNodes) partitions.push({ name: 'cpu', nodes: opts.nodes - gpuNodes });
  const cluster = new PopulatedCluster({
    partitions,
    seed: opts.seed ?? 1,
    workload: 'none',
    ...(opts.startMs !== undefined ? { startMs: opts.startMs } : {}),
  });
  cluster.populate(opts.jobs);
  return cluster;
}
