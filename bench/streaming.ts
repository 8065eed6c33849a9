/**
 * Benchmark of the fake slurmrestd streaming a 100k-job `/jobs/` body (~540 MB): MB/s to a client
 * that reads as fast as it can, the RSS growth meanwhile, and how long a `/diag/` takes to answer
 * right after a client of that body went away. Figures, not assertions: the tests in
 * test/demo/streaming.test.ts check the behaviour (bounded, stops for a departed client) without
 * timing anything.
 *
 * Run: npm run build && node dist/bench/streaming.js
 */
import { get as httpGet, type IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { startFakeSlurmrestd } from '../src/demo/fake-slurmrestd.js';
import { bigCluster } from '../test/support/big-cluster.js';
import { sayRuntime } from './stats.js';

const MB = 1e6;
const RUNS = 3;

function request(url: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => httpGet(url, resolve).on('error', reject));
}

async function drain(res: IncomingMessage): Promise<{ bytes: number; peakRss: number }> {
  let bytes = 0;
  let peakRss = process.memoryUsage().rss;
  let n = 0;
  for await (const chunk of res) {
    bytes += (chunk as Buffer).length;
    if (++n % 256 === 0) peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }
  return { bytes, peakRss };
}

async function main(): Promise<void> {
  const cluster = bigCluster({ nodes: 20_000, jobs: 100_000, seed: 1 });
  const server = await startFakeSlurmrestd({ cluster, versions: ['v0.0.44'] });
  try {
    for (let run = 1; run <= RUNS; run++) {
      const base = process.memoryUsage().rss;
      const t0 = performance.now();
      const { bytes, peakRss } = await drain(await request(`${server.url}/slurm/v0.0.44/jobs/`));
      const seconds = (performance.now() - t0) / 1000;
      const rate = (bytes / MB / seconds).toFixed(1);
      const growth = ((peakRss - base) / MB).toFixed(0);
      console.log(
        `run ${run}: ${(bytes / MB).toFixed(0)} MB in ${seconds.toFixed(2)} s = ${rate} MB/s, RSS +${growth} MB`,
      );
    }
    const gone = await request(`${server.url}/slurm/v0.0.44/jobs/`);
    await gone[Symbol.asyncIterator]().next();
    gone.destroy();
    const t0 = performance.now();
    const diag = await request(`${server.url}/slurm/v0.0.44/diag/`);
    await drain(diag);
    console.log(`/diag/ after a departed /jobs/ client: ${(performance.now() - t0).toFixed(1)} ms`);
  } finally {
    await server.close();
  }
}

sayRuntime();
await main();
