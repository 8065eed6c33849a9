/**
 * What Slurm's native families and the families beyond them cost at 20,000 nodes and 100,000 jobs:
 * the render of one publish (observe + Prometheus exposition) with and without them, the series
 * and bytes they add, and the heap the render leaves behind. The snapshot is the fake cluster's
 * model (what the decoders produce), so only rules and rendering are measured, not transfer;
 * requests per cycle are counted against the fake slurmrestd for each choice of sub-collectors.
 *
 * Run: npm run build && node --expose-gc dist/bench/native-families.js [--renders N (3)]
 */
import { performance } from 'node:perf_hooks';
import { ClusterRunner } from '../src/cluster/agent.js';
import { noAuth } from '../src/cluster/api/http/auth.js';
import { SlurmClient } from '../src/cluster/api/client.js';
import type { SlurmPartition } from '../src/cluster/model.js';
import { observe } from '../src/cluster/observe.js';
import { OPTIONAL_SUB_COLLECTORS, type ClusterSnapshot, type OptionalSubCollector } from '../src/cluster/snapshot.js';
import { FakeCluster } from '../src/demo/fake-cluster.js';
import { bigCluster } from '../test/support/big-cluster.js';
import { startFakeSlurmrestd } from '../src/demo/fake-slurmrestd.js';
import { silentLogger } from '../test/support/log.js';
import { Pipeline } from '../src/telemetry/pipeline.js';
import { NATIVE_SPECS, EXTRA_SPECS } from '../src/cluster/metrics.js';
import { nativeFamilies } from '../src/cluster/observe/native.js';
import { knownTruth } from '../test/support/fake-cluster-truth.js';
import { median, sayRuntime } from './stats.js';

const NODES = 20_000;
const JOBS = 100_000;
const MB = 1e6;

function argNumber(name: string, dflt: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/**
 * Requests one collection makes, per choice of optional sub-collectors (on a small fake: the count
 * does not depend on size).
 */
async function requestsPerCycle(optional: readonly OptionalSubCollector[]): Promise<number> {
  const cluster = new FakeCluster({ nodes: 8, seed: 1 });
  const server = await startFakeSlurmrestd({ cluster, versions: ['v0.0.44'], host: '127.0.0.1', port: 0 });
  const api = new SlurmClient({
    server: server.url,
    tokenSource: noAuth(),
    requestTimeoutMs: 10_000,
    logger: silentLogger(),
  });
  const runner = new ClusterRunner({
    source: { api, jobSource: 'controller', accountingLookbackMs: 3_600_000, optional },
    collectionIntervalMs: 60_000,
    maxInflight: 1,
    metrics: { host: '127.0.0.1', port: 0 },
    monitoring: { host: '127.0.0.1', port: 0 },
    resource: { serviceName: 'bench', serviceVersion: 'bench', hostName: 'bench' },
    logger: silentLogger(),
    close: () => api.close(),
  });
  await runner.collect(); // negotiation happens here
  const before = [...server.requests.values()].reduce((a, b) => a + b, 0);
  await runner.collect();
  const after = [...server.requests.values()].reduce((a, b) => a + b, 0);
  await runner.shutdown();
  await server.close();
  return after - before;
}

/** Slurm's own families alone: the counting over nodes, jobs and partitions, every lazy family iterated. */
function nativeAlone(snap: ClusterSnapshot, runs: number): string {
  const wall: number[] = [];
  const cpu: number[] = [];
  let points = 0;
  for (let i = 0; i < runs; i++) {
    gc();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    points = 0;
    for (const f of nativeFamilies(snap)) for (const _ of 'lazy' in f ? f.lazy : f.points) points++;
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  return `Slurm's own families alone (no rendering): median ${median(wall).toFixed(0)} ms wall, ${median(cpu).toFixed(0)} ms CPU, of ${runs}; ${points} points`;
}

async function main(): Promise<void> {
  const renders = argNumber('--renders', 3);
  console.log(
    `requests per collection: Soperator's families only ${await requestsPerCycle([])}, default (partitions) ${await requestsPerCycle(['partitions'])}, every optional sub-collector ${await requestsPerCycle(OPTIONAL_SUB_COLLECTORS)}`,
  );
  const t0 = performance.now();
  const cluster = bigCluster({ nodes: NODES, jobs: JOBS });
  const truth = knownTruth(cluster);
  const partitions: SlurmPartition[] = [...new Set(truth.nodes.flatMap((n) => n.partitions))].map((name) => {
    const nodes = truth.nodes.filter((n) => n.partitions.includes(name));
    return {
      name,
      nodes: nodes.map((n) => n.name).join(','),
      total_nodes: nodes.length,
      total_cpus: nodes.reduce((a, n) => a + (n.cpus ?? 0), 0),
    };
  });
  const at = <T>(value: T) => ({ value, atMs: truth.nowMs, seq: 1 });
  const snap: ClusterSnapshot = {
    atMs: truth.nowMs,
    nodes: at(truth.nodes),
    jobs: at(truth.jobs),
    diag: at(truth.diag),
    partitions: at(partitions),
  };
  console.log(
    `fake cluster: ${truth.nodes.length} nodes, ${truth.jobs.length} jobs, ${partitions.length} partitions (built in ${((performance.now() - t0) / 1000).toFixed(1)} s)`,
  );
  console.log(nativeAlone(snap, renders * 3));
  const added = new Set([...NATIVE_SPECS, ...EXTRA_SPECS].map((s) => s.name));
  for (const withNative of [false, true]) {
    const pipeline = new Pipeline({
      resource: { serviceName: 'bench', serviceVersion: 'bench', hostName: 'bench' },
      scope: { name: 'bench', version: '0' },
      logger: silentLogger(),
    });
    const times: number[] = [];
    let heapAfter = 0;
    for (let i = 0; i < renders; i++) {
      gc();
      const heap0 = process.memoryUsage().heapUsed;
      const r0 = performance.now();
      const families = observe(snap, truth.nowMs).filter((f) => withNative || !added.has(f.spec.name));
      await pipeline.publish(families, truth.nowMs);
      times.push(performance.now() - r0);
      gc();
      heapAfter = process.memoryUsage().heapUsed - heap0;
    }
    const text = pipeline.exposition.text;
    const series = text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
    console.log(
      `${withNative ? 'with' : 'without'} the native and extra families: render median ${median(times).toFixed(0)} ms of ${times.map((t) => t.toFixed(0)).join('/')}; ${series} series, ${(Buffer.byteLength(text) / MB).toFixed(1)} MB exposition; heap held after the render ${(heapAfter / MB).toFixed(1)} MB`,
    );
    await pipeline.shutdown?.();
  }
}

sayRuntime();
await main();
