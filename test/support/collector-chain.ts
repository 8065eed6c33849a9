/**
 * The pieces the tests of the real Collector share: a Collector's listen addresses moved to free
 * loopback ports (a second config over the shipped one), and a Prometheus taking remote write as
 * the shipped otel-config/prometheus.yml configures one.
 */
import fs from 'node:fs';
import { parse } from 'yaml';
import { startPrometheus, type PrometheusServer } from './prometheus.js';
import { findTool, freePort, toolPath } from './tools.js';

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
