/**
 * The pieces the tests and benchmarks of the real Collector share: a Collector's listen addresses
 * moved to free loopback ports (a second config over the shipped one), a Prometheus taking remote
 * write as the shipped otel-config/prometheus.yml configures one, the whole shipped chain (node-local
 * Collector → gateway → :8889 and that Prometheus), a Collector's own telemetry, and a proxy that
 * records the size of each request it passes on.
 */
import fs from 'node:fs';
import http from 'node:http';
import { parse } from 'yaml';
import { startCollector, tokenFiles, type RunningCollector, type TokenFiles } from './collector.js';
import { parseExposition, sumOf } from './exposition.js';
import { startPrometheus, type PrometheusServer } from './prometheus.js';
import { findTool, freePort, toolPath } from './tools.js';

export const AGENT_CONFIG = 'otel-config/collector-agent.yaml';
export const GATEWAY_CONFIG = 'otel-config/collector-gateway.yaml';

/** The listen addresses of one Collector, all on free loopback ports. */
export interface Ports {
  readonly grpc: number;
  readonly http: number;
  readonly health: number;
  readonly telemetry: number;
}

export async function ports(): Promise<Ports> {
  return { grpc: await freePort(), http: await freePort(), health: await freePort(), telemetry: await freePort() };
}

/** The second config: the shipped file's listen addresses moved to `p` on 127.0.0.1. */
export function listenOn(p: Ports, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    extensions: { health_check: { endpoint: `127.0.0.1:${p.health}` } },
    receivers: {
      otlp: { protocols: { grpc: { endpoint: `127.0.0.1:${p.grpc}` }, http: { endpoint: `127.0.0.1:${p.http}` } } },
    },
    service: {
      telemetry: {
        metrics: { readers: [{ pull: { exporter: { prometheus: { host: '127.0.0.1', port: p.telemetry } } } }] },
      },
    },
    ...extra,
  };
}

/**
 * A Prometheus taking remote write as otel-config/prometheus.yml configures one: its late-sample
 * window is the shipped file's.
 */
export function remoteWriteStore(dir: string): Promise<PrometheusServer> {
  const shipped = parse(fs.readFileSync('otel-config/prometheus.yml', 'utf8')) as {
    storage?: { tsdb?: { out_of_order_time_window?: string } };
  };
  const window = shipped.storage?.tsdb?.out_of_order_time_window;
  if (window === undefined) throw new Error('otel-config/prometheus.yml sets no storage.tsdb.out_of_order_time_window');
  return startPrometheus(
    toolPath(findTool('prometheus', 'prometheus')),
    dir,
    {},
    [],
    ['--web.enable-remote-write-receiver'],
    [],
    window,
  );
}

/** What the store holds of the node agent's families: series, samples and distinct timestamps. */
export async function storeHistory(
  prom: PrometheusServer,
): Promise<{ series: number; samples: number; timestamps: number }> {
  const q = encodeURIComponent('{__name__=~"ib_slurm_.+"}[1h]');
  const body = (await (await fetch(`${prom.url}/api/v1/query?query=${q}`)).json()) as {
    data: { result: { values: [number, string][] }[] };
  };
  const rows = body.data.result;
  const times = new Set(rows.flatMap((r) => r.values.map(([t]) => t)));
  return { series: rows.length, samples: rows.reduce((n, r) => n + r.values.length, 0), timestamps: times.size };
}

export interface Chain {
  readonly prom: PrometheusServer;
  readonly gateway: RunningCollector;
  readonly local: RunningCollector;
  /** The local Collector's OTLP/HTTP port, where agents push. */
  readonly localHttp: number;
  /** The gateway's OTLP/HTTP and OTLP/gRPC ports. */
  readonly gatewayHttp: number;
  readonly gatewayGrpc: number;
  /** The gateway's :8889 (it requires the scrapers' token: scrapeGateway). */
  readonly gatewayMetrics: string;
  readonly gwTelemetry: string;
  readonly agTelemetry: string;
  /** The token files both Collectors were started with: agents push with `tokens.push`. */
  readonly tokens: TokenFiles;
  stop(): Promise<void>;
}

/**
 * The chain: Prometheus, the gateway, and the node-local Collector in front of it, whose OTLP/HTTP
 * receiver takes requests of at most `localBodyLimit` bytes when given (the Collector's default
 * otherwise, 20 MiB). The gateway names the cluster `cluster` (SLURM_CLUSTER_NAME).
 */
export async function startChain(dir: string, localBodyLimit?: number, cluster = 'coltest'): Promise<Chain> {
  const prom = await remoteWriteStore(dir);
  const [gw, ag, exposition] = [await ports(), await ports(), await freePort()];
  const gateway = await startCollector(
    GATEWAY_CONFIG,
    listenOn(gw, { exporters: { prometheus: { endpoint: `127.0.0.1:${exposition}` } } }),
    { SLURM_CLUSTER_NAME: cluster, PROMETHEUS_REMOTE_WRITE_URL: `${prom.url}/api/v1/write` },
    dir,
    `http://127.0.0.1:${gw.health}/`,
  ).catch(async (e: unknown) => {
    await prom.stop();
    throw e;
  });
  const localConfig = listenOn(ag) as { receivers: { otlp: { protocols: { http: Record<string, unknown> } } } };
  if (localBodyLimit !== undefined) localConfig.receivers.otlp.protocols.http.max_request_body_size = localBodyLimit;
  const local = await startCollector(
    AGENT_CONFIG,
    localConfig,
    { OTEL_GATEWAY_ENDPOINT: `127.0.0.1:${gw.grpc}` },
    dir,
    `http://127.0.0.1:${ag.health}/`,
  ).catch(async (e: unknown) => {
    await gateway.stop();
    await prom.stop();
    throw e;
  });
  return {
    prom,
    gateway,
    local,
    localHttp: ag.http,
    gatewayHttp: gw.http,
    gatewayGrpc: gw.grpc,
    gatewayMetrics: `http://127.0.0.1:${exposition}/metrics`,
    gwTelemetry: `http://127.0.0.1:${gw.telemetry}/metrics`,
    agTelemetry: `http://127.0.0.1:${ag.telemetry}/metrics`,
    tokens: tokenFiles(dir),
    stop: async () => {
      await local.stop();
      await gateway.stop();
      await prom.stop();
    },
  };
}

/** The sum of a family's samples matching `match` on a Collector's own telemetry endpoint (`:8888`). */
export async function collectorTelemetry(
  url: string,
  name: string,
  match: Record<string, string> = {},
): Promise<number> {
  return sumOf(parseExposition(await (await fetch(url)).text()), name, match);
}

/** One request a recording proxy passed on: its body's size and the answer's status. */
export interface Proxied {
  readonly bytes: number;
  readonly status: number;
}

/** A loopback proxy to `target` that records each request's body size and the answer's status. */
export async function recordingProxy(target: number): Promise<{ url: string; seen: Proxied[]; close(): void }> {
  const seen: Proxied[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const out = http.request(
        { host: '127.0.0.1', port: target, path: req.url, method: req.method, headers: req.headers },
        (answer) => {
          seen.push({ bytes: body.length, status: answer.statusCode ?? 0 });
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      out.on('error', () => res.writeHead(502).end());
      out.end(body);
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${port}/v1/metrics`, seen, close: () => server.close() };
}
