/**
 * Cluster agent collection benchmark on a big fake cluster: 20,000 nodes and 100,000 jobs in
 * v0.0.44 shapes with `job_resources` (~5.4 KB per job, so `/jobs/` is ~540 MB, more than V8's
 * longest string: the body cannot be read whole and must be decoded as a stream).
 *
 * The fake slurmrestd runs in a child process (this file with `--server`), not a worker thread:
 * the 100k-job cluster it holds and the rendering it does must not count in the agent's RSS (a
 * worker shares the process's RSS and maxRSS) nor in its CPU time, and it gets its own event loop
 * and core (the machine has 2). The same child also plays Prometheus for the scrapes, so reading
 * the scraped bytes does not run on the agent's event loop either. The child does not inherit
 * this process's node flags.
 *
 * Prints, in one run:
 *   (a) raw transfer time of `/slurm/v0.0.44/jobs/` read and discarded (and of nodes+jobs+diag
 *       fetched together, which is what a collection asks for);
 *   (c) full collections with a real ClusterRunner (nodes, jobs, diag; controller source): wall
 *       time, its split, CPU time of both processes, and peak RSS (50 ms samples, and the
 *       kernel's maxRSS for the first, cold, collection: the figure the goal is about);
 *   (d) exported series;
 *   (e) scrape time of /metrics from the agent's own HTTP server, gzip and plain (medians);
 *   (f) the daemon: a ClusterRunner on its own schedule (`--daemon-interval-ms`, 5 s) in a fresh
 *       process with Node's default flags (no heap cap, no --expose-gc), until it has stored
 *       `--daemon-collections` (10) /jobs results: its maxRSS over all of them, RSS after each,
 *       the /jobs run times and CPU per collection;
 *   (b) native JSON.parse MB/s on a ~50 MB slice (a JSON array of the first N job elements of
 *       the same body), extrapolated to the full byte count: the baseline, in wall and CPU time
 *       (on a shared machine the CPU ratio is the steadier one). It runs last, in a short-lived
 *       process of its own (`--baseline`), so that its ~0.5 GB of parsed objects touch neither
 *       the agent's heap nor its RSS.
 * Goals: collection ≤ 1.25× the native-parse baseline; RSS ≤ 500 MB, the daemon's over 10
 * collections included; a scrape ≤ 300 ms.
 *
 * Run: npm run build && node dist/bench/cluster-collect.js [--collections N (2)] [--scrapes N (7)]
 *      [--daemon-collections N (10)] [--daemon-interval-ms MS (5000)]
 */
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { gunzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { ClusterRunner } from '../src/cluster/agent.js';
import { noAuth } from '../src/cluster/api/http/auth.js';
import type { CallResult } from '../src/cluster/api/call-result.js';
import { SlurmClient } from '../src/cluster/api/client.js';
import type { SlurmApi } from '../src/cluster/fetchers.js';
import { JsonArraySplitter } from '../src/json/splitter.js';
import { bigCluster } from '../test/support/big-cluster.js';
import { startFakeSlurmrestd } from '../src/demo/fake-slurmrestd.js';
import { silentLogger } from '../test/support/log.js';
import { serveAgent } from '../src/telemetry/runtime.js';
import { median, sayRuntime } from './stats.js';

const NODES = 20_000;
const JOBS = 100_000;
const VERSION = 'v0.0.44';
const SLICE_BYTES = 50 * 1000 * 1000;
const GOAL_COLLECTION_RATIO = 1.25;
const GOAL_RSS_MB = 500;
const GOAL_SCRAPE_MS = 300;
const MB = 1e6;

// ------------------------------------------------------------------ IPC between the two processes

type ToServer =
  | {
      readonly type: 'scrape';
      readonly id: number;
      readonly url: string;
      readonly gzip: boolean;
      readonly times: number;
    }
  | { readonly type: 'cpu'; readonly id: number };
type FromServer =
  | { readonly type: 'ready'; readonly url: string; readonly buildMs: number }
  | { readonly type: 'scraped'; readonly id: number; readonly results: readonly Fetched[] }
  | { readonly type: 'cpu'; readonly id: number; readonly cpuMs: number };

interface Fetched {
  readonly ms: number;
  readonly bytes: number;
  readonly status: number;
  readonly encoding: string;
}

/** GETs a URL and reads the body to its last byte, discarding it. */
function fetchDiscard(url: string, headers: http.OutgoingHttpHeaders = {}): Promise<Fetched> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => (bytes += c.length));
        res.on('end', () =>
          resolve({
            ms: performance.now() - t0,
            bytes,
            status: res.statusCode ?? 0,
            encoding: String(res.headers['content-encoding'] ?? 'identity'),
          }),
        );
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

// ------------------------------------------------------------------ the child: slurmrestd + scraper

async function serverMain(): Promise<void> {
  const t0 = performance.now();
  const cluster = bigCluster({ nodes: NODES, jobs: JOBS, seed: 1 });
  const server = await startFakeSlurmrestd({ cluster, versions: [VERSION], host: '127.0.0.1', port: 0 });
  const send = (m: FromServer): void => void process.send?.(m);
  send({ type: 'ready', url: server.url, buildMs: performance.now() - t0 });
  process.on('message', (m: ToServer) => {
    if (m.type === 'cpu') {
      const u = process.cpuUsage();
      send({ type: 'cpu', id: m.id, cpuMs: (u.user + u.system) / 1000 });
      return;
    }
    void (async () => {
      const results: Fetched[] = [];
      for (let i = 0; i < m.times; i++)
        results.push(await fetchDiscard(m.url, m.gzip ? { 'accept-encoding': 'gzip' } : {}));
      send({ type: 'scraped', id: m.id, results });
    })();
  });
  process.on('disconnect', () => void server.close().finally(() => process.exit(0)));
}

class ServerChild {
  private nextId = 0;
  private constructor(private readonly child: ChildProcess) {}

  static async start(): Promise<{ child: ServerChild; url: string; buildMs: number }> {
    // The agent's node flags (e.g. --max-old-space-size) are for the agent, not the fake server.
    const child = fork(fileURLToPath(import.meta.url), ['--server'], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv: [],
    });
    const ready = await new Promise<Extract<FromServer, { type: 'ready' }>>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`server child exited with ${code}`)));
      child.on('message', (m: FromServer) => m.type === 'ready' && resolve(m));
    });
    return { child: new ServerChild(child), url: ready.url, buildMs: ready.buildMs };
  }

  /** Has the child (idle by then) scrape `url` `times` times in a row. */
  scrape(url: string, gzip: boolean, times: number): Promise<readonly Fetched[]> {
    const id = ++this.nextId;
    return new Promise((resolve) => {
      const on = (m: FromServer): void => {
        if (m.type !== 'scraped' || m.id !== id) return;
        this.child.off('message', on);
        resolve(m.results);
      };
      this.child.on('message', on);
      this.child.send({ type: 'scrape', id, url, gzip, times } satisfies ToServer);
    });
  }

  /** CPU time the child has used so far (ms). */
  cpuMs(): Promise<number> {
    const id = ++this.nextId;
    return new Promise((resolve) => {
      const on = (m: FromServer): void => {
        if (m.type !== 'cpu' || m.id !== id) return;
        this.child.off('message', on);
        resolve(m.cpuMs);
      };
      this.child.on('message', on);
      this.child.send({ type: 'cpu', id } satisfies ToServer);
    });
  }

  stop(): void {
    this.child.disconnect();
  }
}

// ------------------------------------------------------------------ helpers

const fmtMs = (ms: number): string =>
  ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`;
const range = (xs: readonly number[], f: (x: number) => string = fmtMs): string =>
  `median ${f(median(xs))} (${f(Math.min(...xs))}–${f(Math.max(...xs))}, n=${xs.length})`;
const verdict = (ok: boolean): string => (ok ? 'MET' : 'MISSED');

/** Peak RSS seen by a 50 ms sampler (it cannot fire while the event loop is busy; see maxRSS). */
function rssSampler(): { stop(): number } {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, process.memoryUsage().rss);
    },
  };
}

/** Kernel high-water mark of this process's RSS, bytes. */
const maxRss = (): number => process.resourceUsage().maxRSS * 1024;

/** The first job elements of `/jobs/` whose total reaches `target` bytes, as one JSON array document. */
async function jobSlice(url: string, target: number): Promise<{ doc: Buffer; elements: Buffer[] }> {
  const elements: Buffer[] = [];
  let total = 0;
  await new Promise<void>((resolve, reject) => {
    const req = http.get(url, (res) => {
      const splitter = new JsonArraySplitter({
        arrayKey: 'jobs',
        onElement: (b) => {
          if (total >= target) return;
          elements.push(Buffer.from(b));
          total += b.length + 1;
        },
      });
      res.on('data', (c: Buffer) => {
        splitter.write(c);
        if (total >= target) {
          req.destroy();
          resolve();
        }
      });
      res.on('end', () => resolve());
      res.on('error', () => resolve());
    });
    req.on('error', (err) => (total >= target ? resolve() : reject(err)));
  });
  const parts: Buffer[] = [Buffer.from('[')];
  elements.forEach((e, i) => parts.push(i === 0 ? e : Buffer.concat([Buffer.from(','), e])));
  parts.push(Buffer.from(']'));
  return { doc: Buffer.concat(parts), elements };
}

/** Lines of an exposition that are series (not comments, not empty). */
function countSeries(text: Buffer): number {
  let n = 0;
  let i = 0;
  while (i < text.length) {
    const nl = text.indexOf(0x0a, i);
    const end = nl < 0 ? text.length : nl;
    if (end > i && text[i] !== 0x23 /* # */) n++;
    i = end + 1;
  }
  return n;
}

/** The client, recording how long each call of the last collection took. */
function timed(api: SlurmClient, took: Map<string, number>): SlurmApi {
  const wrap =
    <T>(name: string, call: () => Promise<CallResult<T>>) =>
    async (): Promise<CallResult<T>> => {
      const t0 = performance.now();
      const r = await call();
      took.set(name, performance.now() - t0);
      return r;
    };
  return {
    nodes: (o) => wrap('nodes', () => api.nodes(o))(),
    jobs: (o) => wrap('jobs', () => api.jobs(o))(),
    diag: (o) => wrap('diag', () => api.diag(o))(),
    accountingJobs: (q, o) => wrap('accounting', () => api.accountingJobs(q, o))(),
  };
}

/** A cluster runner on the controller source, as the agent runs by default. */
function benchRunner(api: SlurmApi, intervalMs: number, close: () => void): ClusterRunner {
  return new ClusterRunner({
    source: { api, jobSource: 'controller', accountingLookbackMs: 3_600_000 },
    collectionIntervalMs: intervalMs,
    maxInflight: 1,
    metrics: { host: '127.0.0.1', port: 0 },
    monitoring: { host: '127.0.0.1', port: 0 },
    resource: { serviceName: 'slurm-otel-cluster', serviceVersion: 'bench', hostName: 'bench' },
    logger: silentLogger(),
    close,
  });
}

const cpuNow = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

function argNumber(name: string, dflt: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}

// ------------------------------------------------------------------ the agent side

async function main(): Promise<void> {
  const collections = argNumber('--collections', 2);
  const scrapes = argNumber('--scrapes', 7);
  const daemonRuns = argNumber('--daemon-collections', 10);
  const daemonIntervalMs = argNumber('--daemon-interval-ms', 5000);
  const rss0 = process.memoryUsage().rss;
  const { child, url, buildMs } = await ServerChild.start();
  console.log(
    `fake slurmrestd (child process, ${VERSION} only): ${NODES} nodes, ${JOBS} jobs, built in ${fmtMs(buildMs)} at ${url}`,
  );
  const jobsUrl = `${url}/slurm/${VERSION}/jobs/`;
  try {
    // (a) raw transfer: read and discard. The first read also warms the server's renderer up.
    const raw: number[] = [];
    let jobsBytes = 0;
    for (let i = 0; i < 3; i++) {
      const r = await fetchDiscard(jobsUrl);
      raw.push(r.ms);
      jobsBytes = r.bytes;
    }
    const together: number[] = [];
    for (let i = 0; i < 2; i++) {
      const t0 = performance.now();
      await Promise.all(['nodes', 'jobs', 'diag'].map((e) => fetchDiscard(`${url}/slurm/${VERSION}/${e}/`)));
      together.push(performance.now() - t0);
    }
    const nodesBytes = (await fetchDiscard(`${url}/slurm/${VERSION}/nodes/`)).bytes;
    console.log(
      `(a) raw transfer /jobs/ ${(jobsBytes / MB).toFixed(1)} MB (${(jobsBytes / JOBS).toFixed(0)} B/job): ${range(raw)} = ${(jobsBytes / MB / (median(raw) / 1000)).toFixed(0)} MB/s`,
    );
    console.log(
      `    raw transfer nodes (${(nodesBytes / MB).toFixed(1)} MB) + jobs + diag together: ${range(together)}`,
    );

    // (c) full collections with a real ClusterRunner; the first one is the cold one.
    const logger = silentLogger();
    const api = new SlurmClient({
      server: url,
      tokenSource: noAuth(),
      apiVersion: VERSION,
      requestTimeoutMs: 300_000,
      retries: 0,
      logger,
    });
    const took = new Map<string, number>();
    const runner = benchRunner(timed(api, took), 3_600_000, () => api.close());
    const rssBefore = process.memoryUsage().rss;
    const collectMs: number[] = [];
    const collectCpuMs: number[] = [];
    const tickMs: number[] = [];
    /** Peak RSS of each collection: the larger of the 50 ms samples and the kernel's maxRSS so far. */
    const peaks: number[] = [];
    for (let i = 0; i < collections; i++) {
      const sampler = rssSampler();
      const [cpu0, serverCpu0] = [cpuNow(), await child.cpuMs()];
      const t0 = performance.now();
      const tick = await runner.collect();
      const ms = performance.now() - t0;
      const [cpu, serverCpu] = [cpuNow() - cpu0, (await child.cpuMs()) - serverCpu0];
      const sampled = sampler.stop();
      if (tick.failed.length > 0) throw new Error(`collection failed: ${tick.failed.join(', ')}`);
      collectMs.push(ms);
      collectCpuMs.push(cpu);
      tickMs.push(tick.durationMs);
      // maxRSS is a high-water mark of the whole process: exact for the first collection only.
      peaks.push(i === 0 ? Math.max(sampled, maxRss()) : sampled);
      console.log(
        `(c) collection ${i + 1}${i === 0 ? ' (cold)' : ''}: ${fmtMs(ms)} = fetch+decode ${fmtMs(tick.durationMs)} + rules+render ${fmtMs(ms - tick.durationMs)}; ` +
          `calls ${[...took].map(([k, v]) => `${k} ${fmtMs(v)}`).join(', ')}; CPU agent ${fmtMs(cpu)}, fake slurmrestd ${fmtMs(serverCpu)}; ` +
          `peak RSS ${((peaks[i] as number) / MB).toFixed(0)} MB${i === 0 ? ` (maxRSS ${(maxRss() / MB).toFixed(0)} MB)` : ` (sampled; maxRSS so far ${(maxRss() / MB).toFixed(0)} MB)`}`,
      );
      if (i === 0)
        console.log(
          `    decoded ${tick.snapshot.jobs?.value.length} jobs, ${tick.snapshot.nodes?.value.length} nodes; RSS before ${(rssBefore / MB).toFixed(0)} MB (process start ${(rss0 / MB).toFixed(0)} MB)`,
        );
    }

    // (e) scrapes of the agent's own server, by the child (idle now) playing Prometheus.
    const served = await serveAgent({
      metrics: { host: '127.0.0.1', port: 0 },
      monitoring: { host: '127.0.0.1', port: 0 },
      pipeline: runner.pipeline,
      selfMetrics: () => runner.self.exposition(),
      healthy: () => ({ ok: true, detail: 'bench' }),
    });
    const metricsUrl = `${served.metrics.url}/metrics`;
    const gzipFirst = (await child.scrape(metricsUrl, true, 1))[0] as Fetched;
    const gzip = await child.scrape(metricsUrl, true, scrapes);
    const plain = await child.scrape(metricsUrl, false, scrapes);
    await served.close();
    const rssAfterScrapes = maxRss();

    // (d) exported series, counted in the exposition the agent serves.
    const exposition = gunzipSync(runner.pipeline.exposition.gzip ?? Buffer.alloc(0));
    const series = countSeries(exposition);

    await runner.shutdown();

    // (f) the daemon: a fresh process with default flags, on its own schedule.
    const daemon = daemonRuns > 0 ? await runDaemon(url, daemonRuns, daemonIntervalMs) : undefined;

    // (b) baseline, in a process of its own (fresh heap, default flags): native JSON.parse of a
    // ~50 MB slice of the same body, and element-wise parsing of the same slice.
    const base = await measureBaseline(jobsUrl);
    const nativeMBps = base.docBytes / MB / (median(base.parseMs) / 1000);
    const elementMBps = base.docBytes / MB / (median(base.elementMs) / 1000);
    const nativeFullMs = (jobsBytes / MB / nativeMBps) * 1000;

    console.log(
      `(d) series exported: ${series} (${runner.pipeline.producer.size} snapshot points), exposition ${(exposition.length / MB).toFixed(1)} MB`,
    );
    console.log(
      `(e) scrape /metrics gzip: first ${fmtMs(gzipFirst.ms)}, then ${range(gzip.map((r) => r.ms))}, ${(gzipFirst.bytes / MB).toFixed(1)} MB on the wire`,
    );
    console.log(
      `    scrape /metrics plain: ${range(plain.map((r) => r.ms))}, ${((plain[0]?.bytes ?? 0) / MB).toFixed(1)} MB; maxRSS after the scrapes ${(rssAfterScrapes / MB).toFixed(0)} MB`,
    );
    console.log(
      `(b) native JSON.parse of a ${(base.docBytes / MB).toFixed(1)} MB slice (${base.jobs} jobs): ${range(base.parseMs)} = ${nativeMBps.toFixed(0)} MB/s`,
    );
    console.log(`    element-wise JSON.parse of the same slice: ${elementMBps.toFixed(0)} MB/s`);
    console.log(
      `    baseline for the full ${(jobsBytes / MB).toFixed(0)} MB at ${nativeMBps.toFixed(0)} MB/s: ${fmtMs(nativeFullMs)}`,
    );
    const nativeFullCpuMs = (jobsBytes / base.docBytes) * median(base.parseCpuMs);
    console.log(
      `    in CPU time: ${fmtMs(median(base.parseCpuMs))} for the slice, ${fmtMs(nativeFullCpuMs)} for the full body (the agent's collections: ${range(collectCpuMs)} CPU)`,
    );
    if (daemon) {
      console.log(
        `(f) daemon (own process, default heap, interval ${fmtMs(daemonIntervalMs)}): ${daemon.jobsMs.length} /jobs runs ${range(daemon.jobsMs)}, ` +
          `${daemon.ticksSkipped} ticks skipped for /jobs, ${daemon.failed} failed; CPU ${fmtMs(daemon.cpuMs / daemon.jobsMs.length)} per collection`,
      );
      console.log(
        `    RSS after each /jobs run: ${daemon.rssAfter.map((b) => (b / MB).toFixed(0)).join(', ')} MB; sampled peak ${(daemon.sampledPeak / MB).toFixed(0)} MB; maxRSS ${(daemon.maxRss / MB).toFixed(0)} MB`,
      );
    }

    const first = collectMs[0] as number;
    const ratio = first / nativeFullMs;
    const peakMb = (peaks[0] as number) / MB;
    const scrapeWorst = Math.max(median(gzip.map((r) => r.ms)), median(plain.map((r) => r.ms)));
    console.log('goals:');
    console.log(
      `  collection ${fmtMs(first)} = ${ratio.toFixed(2)}× native-parse baseline (${(first / median(raw)).toFixed(2)}× raw transfer)   goal ≤ ${GOAL_COLLECTION_RATIO}×   ${verdict(ratio <= GOAL_COLLECTION_RATIO)}`,
    );
    console.log(`  peak RSS ${peakMb.toFixed(0)} MB   goal ≤ ${GOAL_RSS_MB} MB   ${verdict(peakMb <= GOAL_RSS_MB)}`);
    console.log(
      `  scrape ${fmtMs(scrapeWorst)} (worse median of gzip and plain)   goal ≤ ${GOAL_SCRAPE_MS} ms   ${verdict(scrapeWorst <= GOAL_SCRAPE_MS)}`,
    );
    const cpuRatio = (collectCpuMs[0] as number) / nativeFullCpuMs;
    console.log(
      `  collection CPU ${fmtMs(collectCpuMs[0] as number)} = ${cpuRatio.toFixed(2)}× native-parse CPU   goal ≤ ${GOAL_COLLECTION_RATIO}×   ${verdict(cpuRatio <= GOAL_COLLECTION_RATIO)}`,
    );
    if (collections > 1) {
      const later = collectMs.slice(1);
      const laterPeak = Math.max(...peaks.slice(1)) / MB;
      console.log(
        `  (later collections: ${range(later)} = ${(median(later) / nativeFullMs).toFixed(2)}× baseline; peak RSS ${laterPeak.toFixed(0)} MB sampled)`,
      );
    }
    if (daemon) {
      const d = daemon.maxRss / MB;
      const dRatio = median(daemon.jobsMs) / nativeFullMs;
      console.log(
        `  daemon maxRSS over ${daemon.jobsMs.length} collections ${d.toFixed(0)} MB   goal ≤ ${GOAL_RSS_MB} MB   ${verdict(d <= GOAL_RSS_MB)}`,
      );
      console.log(
        `  daemon /jobs run (fetch+decode) ${fmtMs(median(daemon.jobsMs))} = ${dRatio.toFixed(2)}× native-parse baseline   goal ≤ ${GOAL_COLLECTION_RATIO}×   ${verdict(dRatio <= GOAL_COLLECTION_RATIO)}`,
      );
    }
  } finally {
    child.stop();
  }
}

// ------------------------------------------------------------------ the daemon case

interface DaemonReport {
  /** Completed /jobs runs (fetch + decode), ms. */
  readonly jobsMs: readonly number[];
  /** RSS sampled every 50 ms after each /jobs run ended, and the highest sample, bytes. */
  readonly sampledPeak: number;
  readonly rssAfter: readonly number[];
  /** Kernel high-water mark of the daemon's RSS over the whole run, bytes. */
  readonly maxRss: number;
  readonly cpuMs: number;
  readonly ticksSkipped: number;
  readonly failed: number;
}

/**
 * The agent as it runs in production: a ClusterRunner on its own schedule, in a process of its
 * own with Node's default flags (no heap cap, no --expose-gc), until `runs` /jobs results were
 * stored. Its maxRSS is the figure: every collection, the publishes between, and the garbage.
 */
async function daemonMain(url: string, runs: number, intervalMs: number): Promise<void> {
  const logger = silentLogger();
  const api = new SlurmClient({
    server: url,
    tokenSource: noAuth(),
    apiVersion: VERSION,
    requestTimeoutMs: 600_000,
    retries: 0,
    logger,
  });
  const jobsMs: number[] = [];
  const rssAfter: number[] = [];
  let failed = 0;
  let done: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const counted: SlurmApi = {
    nodes: (o) => api.nodes(o),
    diag: (o) => api.diag(o),
    accountingJobs: (q, o) => api.accountingJobs(q, o),
    jobs: async (o) => {
      const t0 = performance.now();
      const r = await api.jobs(o);
      if (r.ok) jobsMs.push(performance.now() - t0);
      else failed++;
      setImmediate(() => {
        rssAfter.push(process.memoryUsage().rss);
        if (jobsMs.length >= runs) done();
      });
      return r;
    },
  };
  const runner = benchRunner(counted, intervalMs, () => api.close());
  const sampler = rssSampler();
  const cpu0 = cpuNow();
  const schedule = runner.schedule(intervalMs);
  await finished;
  await schedule.stop();
  const cpuMs = cpuNow() - cpu0;
  const sampledPeak = sampler.stop();
  const self = (await runner.self.exposition()).text;
  const ticksSkipped = Number(/slurm_exporter_collector_skipped_total\{collector="jobs"\} (\d+)/.exec(self)?.[1] ?? 0);
  await runner.shutdown();
  process.send?.({
    jobsMs,
    sampledPeak,
    rssAfter,
    maxRss: maxRss(),
    cpuMs,
    ticksSkipped,
    failed,
  } satisfies DaemonReport);
  process.disconnect?.();
}

function runDaemon(url: string, runs: number, intervalMs: number): Promise<DaemonReport> {
  const child = fork(fileURLToPath(import.meta.url), ['--daemon', url, String(runs), String(intervalMs)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [],
  });
  return new Promise((resolve, reject) => {
    child.once('message', (m: DaemonReport) => resolve(m));
    child.once('exit', (code) => reject(new Error(`daemon child exited with ${code}`)));
  });
}

interface Baseline {
  readonly docBytes: number;
  readonly jobs: number;
  readonly parseMs: readonly number[];
  /** CPU time of the same parses: on a shared machine, the fairer baseline. */
  readonly parseCpuMs: readonly number[];
  readonly elementMs: readonly number[];
}

async function baselineMain(jobsUrl: string): Promise<void> {
  const slice = await jobSlice(jobsUrl, SLICE_BYTES);
  const text = slice.doc.toString('utf8');
  const parseMs: number[] = [];
  const parseCpuMs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const [t0, c0] = [performance.now(), cpuNow()];
    JSON.parse(text);
    parseMs.push(performance.now() - t0);
    parseCpuMs.push(cpuNow() - c0);
  }
  const elementMs: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    for (const e of slice.elements) JSON.parse(e.toString('utf8'));
    elementMs.push(performance.now() - t0);
  }
  process.send?.({
    docBytes: slice.doc.length,
    jobs: slice.elements.length,
    parseMs,
    parseCpuMs,
    elementMs,
  } satisfies Baseline);
  process.disconnect?.();
}

function measureBaseline(jobsUrl: string): Promise<Baseline> {
  const child = fork(fileURLToPath(import.meta.url), ['--baseline', jobsUrl], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [],
  });
  return new Promise((resolve, reject) => {
    child.once('message', (m: Baseline) => resolve(m));
    child.once('exit', (code) => reject(new Error(`baseline child exited with ${code}`)));
  });
}

if (process.argv.includes('--server')) {
  await serverMain();
} else if (process.argv.includes('--daemon')) {
  const at = process.argv.indexOf('--daemon');
  await daemonMain(process.argv[at + 1] as string, Number(process.argv[at + 2]), Number(process.argv[at + 3]));
} else if (process.argv.includes('--baseline')) {
  await baselineMain(process.argv[process.argv.indexOf('--baseline') + 1] as string);
} else {
  sayRuntime();
  await main();
}
