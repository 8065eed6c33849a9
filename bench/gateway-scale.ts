/**
 * The cluster agent's push at cluster scale through the real gateway: a fake slurmrestd serving
 * 20,000 nodes and 100,000 jobs (flags change it), one collection by a real ClusterRunner, pushed
 * over OTLP/HTTP protobuf through a recording proxy to the gateway Collector
 * (otel-config/collector-gateway.yaml as shipped, listen addresses on loopback), which
 * remote-writes into a real Prometheus (the shipped late-sample window).
 *
 * Prints: the points the collection pushes; the requests it became (count, largest and total
 * bytes, against the receiver's default 20 MiB limit, and the answers the gateway gave); how long
 * the push took; the end-to-end delay (push start until Prometheus holds as many of the cluster
 * agent's series as its /metrics has); the gateway's CPU time and peak RSS (from /proc) over the
 * run; and whether the store's series equal the exported ones (none lost, none doubled).
 *
 * With --through-agent the push goes the long way, as on a node that runs the node-local Collector:
 * proxy → otel-config/collector-agent.yaml as shipped → OTLP/gRPC → the gateway; the bench then
 * also prints what the node-local Collector received, sent and failed to send (its own telemetry),
 * the points the gateway accepted, and how many of the pushed points reached the store.
 *
 * Run: npm run build && node dist/bench/gateway-scale.js [--nodes N (20000)] [--jobs N (100000)] [--through-agent]
 * Needs the Collector (scripts/collector/build.sh) and Prometheus (Debian's prometheus).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { ClusterRunner } from '../src/cluster/agent.js';
import { staticToken } from '../src/cluster/api/http/auth.js';
import { SlurmClient } from '../src/cluster/api/client.js';
import { startFakeSlurmrestd } from '../src/demo/fake-slurmrestd.js';
import { clusterAgentOptions } from '../test/support/agents.js';
import { bigCluster } from '../test/support/big-cluster.js';
import { collectorPath, startCollector, tokenFiles, type RunningCollector } from '../test/support/collector.js';
import { AGENT_CONFIG, collectorTelemetry, listenOn, ports, recordingProxy } from '../test/support/collector-chain.js';
import { parseExposition } from '../test/support/exposition.js';
import { silentLogger } from '../test/support/log.js';
import { startPrometheus } from '../test/support/prometheus.js';
import { findTool, freePort, stopChild, toolPath, waitFor } from '../test/support/tools.js';
import { sayRuntime } from './stats.js';

const { values: args } = parseArgs({
  options: {
    nodes: { type: 'string', default: '20000' },
    jobs: { type: 'string', default: '100000' },
    'through-agent': { type: 'boolean', default: false },
  },
});
const THROUGH_AGENT = args['through-agent'];
const NODES = Number(args.nodes);
const JOBS = Number(args.jobs);
const TOKEN = 'gateway-scale-token';
const MiB = 1024 * 1024;

/** The node-local Collector, as shipped, listening on loopback and forwarding to the gateway's gRPC `grpc`. */
async function startAgentCollector(
  dir: string,
  grpc: number,
): Promise<{ collector: RunningCollector; http: number; telemetry: string }> {
  const p = await ports();
  const collector = await startCollector(
    AGENT_CONFIG,
    listenOn(p),
    { OTEL_GATEWAY_ENDPOINT: `127.0.0.1:${grpc}` },
    dir,
    `http://127.0.0.1:${p.health}/`,
  );
  return { collector, http: p.http, telemetry: `http://127.0.0.1:${p.telemetry}/metrics` };
}

/** What the node-local Collector received, sent on and failed to send, in points. */
async function agentFigures(url: string): Promise<{ received: number; sent: number; failed: number }> {
  return {
    received: await collectorTelemetry(url, 'otelcol_receiver_accepted_metric_points'),
    sent: await collectorTelemetry(url, 'otelcol_exporter_sent_metric_points'),
    failed: await collectorTelemetry(url, 'otelcol_exporter_send_failed_metric_points'),
  };
}

/** CPU milliseconds and peak RSS (MiB) of a process, from /proc. */
function usage(pid: number): { cpuMs: number; peakMiB: number } {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  const hwm = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? '0';
  return { cpuMs: (ticks * 1000) / 100, peakMiB: Number(hwm) / 1024 };
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-gateway-scale-'));
  const t0 = performance.now();
  const cluster = bigCluster({ nodes: NODES, jobs: JOBS, seed: 1 });
  const server = await startFakeSlurmrestd({ cluster, versions: ['v0.0.44'], host: '127.0.0.1', port: 0 });
  console.log(`cluster: ${NODES} nodes, ${JOBS} jobs, built in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const shipped = (fs.readFileSync('otel-config/prometheus.yml', 'utf8').match(/out_of_order_time_window: (\S+)/) ??
    [])[1];
  const prom = await startPrometheus(
    toolPath(findTool('prometheus', 'prometheus')),
    dir,
    {},
    [],
    ['--web.enable-remote-write-receiver'],
    [],
    shipped,
  );
  const [grpc, httpPort, health, telemetry, exposition] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const override = path.join(dir, 'gateway.override.yaml');
  fs.writeFileSync(
    override,
    stringify({
      extensions: { health_check: { endpoint: `127.0.0.1:${health}` } },
      receivers: {
        otlp: { protocols: { grpc: { endpoint: `127.0.0.1:${grpc}` }, http: { endpoint: `127.0.0.1:${httpPort}` } } },
      },
      exporters: { prometheus: { endpoint: `127.0.0.1:${exposition}` } },
      service: {
        telemetry: {
          metrics: { readers: [{ pull: { exporter: { prometheus: { host: '127.0.0.1', port: telemetry } } } }] },
        },
      },
    }),
  );
  const tokens = tokenFiles(dir);
  const gateway = spawn(
    collectorPath(),
    ['--config', `file:${path.resolve('otel-config/collector-gateway.yaml')}`, '--config', `file:${override}`],
    {
      stdio: ['ignore', 'ignore', 'ignore'],
      env: {
        PATH: process.env.PATH ?? '',
        SLURM_CLUSTER_NAME: 'scale',
        PROMETHEUS_REMOTE_WRITE_URL: `${prom.url}/api/v1/write`,
        ...tokens.env,
      },
    },
  );
  await waitFor(
    'the gateway',
    async () => (await fetch(`http://127.0.0.1:${health}/`).catch(() => undefined))?.ok,
    60_000,
  );
  const agent = THROUGH_AGENT ? await startAgentCollector(dir, grpc) : undefined;
  const proxy = await recordingProxy(agent?.http ?? httpPort);

  const base = clusterAgentOptions({ cluster, server }, TOKEN, {
    otlpUrl: proxy.url,
    otlpBearerTokenFile: tokens.push,
  });
  // The test options' client gives up after 10 s; a 100k-job /jobs is half a gigabyte.
  const api = new SlurmClient({
    server: server.url,
    tokenSource: staticToken({ token: TOKEN, userName: 'root' }),
    requestTimeoutMs: 600_000,
    retries: 0,
    logger: silentLogger(),
  });
  const runner = new ClusterRunner({
    ...base,
    source: { ...base.source, api },
    close: () => api.close(),
    otlp: { ...base.otlp!, timeoutMs: 600_000 },
  });
  const c0 = performance.now();
  const result = await runner.collect();
  const series = parseExposition(runner.pipeline.exposition.text).length;
  console.log(
    `collection: ${((performance.now() - c0) / 1000).toFixed(1)} s, failed: [${result.failed.join(', ')}], ` +
      `${series} series on /metrics, ${runner.pipeline.producer.size} points pushed`,
  );

  const before = usage(gateway.pid!);
  const p0 = performance.now();
  await runner.pipeline.flush();
  const pushS = (performance.now() - p0) / 1000;
  const sizes = proxy.seen.map((s) => s.bytes);
  const statuses = [...new Set(proxy.seen.map((s) => s.status))].join(',');
  console.log(
    `push: ${pushS.toFixed(1)} s, ${sizes.length} requests, largest ${(Math.max(...sizes) / MiB).toFixed(2)} MiB ` +
      `(limit 20 MiB), total ${(sizes.reduce((a, b) => a + b, 0) / MiB).toFixed(1)} MiB, statuses ${statuses}`,
  );
  const query = `count({job="slurm-otel-cluster", __name__=~"slurm_.+"})`;
  const stored = async (): Promise<number> => Number((await prom.query(query))[0]?.value[1] ?? 0);
  const expected = parseExposition(runner.pipeline.exposition.text).filter((s) => s.name.startsWith('slurm_')).length;
  const gwTelemetry = `http://127.0.0.1:${telemetry}/metrics`;
  // Through the node-local Collector, points it failed to send never come: stop waiting once it
  // has settled every point it took and the gateway has written every point it accepted.
  const settled = async (): Promise<boolean> => {
    if (agent === undefined) return false;
    const a = await agentFigures(agent.telemetry);
    const accepted = await collectorTelemetry(gwTelemetry, 'otelcol_receiver_accepted_metric_points');
    const written = await collectorTelemetry(gwTelemetry, 'otelcol_exporter_sent_metric_points', {
      exporter: 'prometheus_remote_write',
    });
    return a.received > 0 && a.sent + a.failed >= a.received && written >= accepted;
  };
  await waitFor(
    'every series in Prometheus',
    async () => (await stored()) >= expected || (await settled()) || undefined,
    600_000,
  ).catch(() => undefined);
  if (agent !== undefined) {
    const a = await agentFigures(agent.telemetry);
    const accepted = await collectorTelemetry(gwTelemetry, 'otelcol_receiver_accepted_metric_points');
    const refused = await collectorTelemetry(gwTelemetry, 'otelcol_receiver_refused_metric_points');
    // A request the node-local Collector timed out on and sent again reaches the gateway twice.
    const retries = agent.collector
      .log()
      .split('\n')
      .filter((l) => /will retry/i.test(l)).length;
    console.log(
      `node-local Collector: received ${a.received} points, sent ${a.sent}, failed to send ${a.failed} ` +
        `(${((100 * a.failed) / Math.max(1, a.received)).toFixed(1)} % lost there), ${retries} requests retried; ` +
        `gateway: accepted ${accepted} points, refused ${refused}`,
    );
    await agent.collector.stop();
  }
  const delayS = (performance.now() - p0) / 1000;
  const after = usage(gateway.pid!);
  console.log(
    `end to end: ${delayS.toFixed(1)} s from push start; store ${await stored()} series of ${expected} exported ` +
      `(${(await stored()) === expected ? 'none lost, none doubled' : 'DIFFERENT'})`,
  );
  console.log(
    `gateway: ${((after.cpuMs - before.cpuMs) / 1000).toFixed(1)} s CPU for the push, peak RSS ${after.peakMiB.toFixed(0)} MiB`,
  );

  await runner.shutdown();
  proxy.close();
  await stopChild(gateway);
  await prom.stop();
  await server.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

sayRuntime();
void main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
