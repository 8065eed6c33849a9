/**
 * scripts/demo-stack.sh, the compose demo's stack without Docker: the real Prometheus and the real
 * Collector with docker-compose.yml's configs, and `slurm-otel demo` pushing to them. The demo's
 * series reach Prometheus through the Collector (remote write, with compose's cluster label), the
 * self-monitoring endpoints are scraped from compose's target files, and a SIGTERM stops all three.
 * Every port is moved to a free one, as the script allows.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectorPath, shouldRunCollector } from '../support/collector.js';
import { findTool, freePort, shouldRun, stopChild, waitFor } from '../support/tools.js';

const prometheus = findTool('prometheus', 'prometheus');
const PORTS = [
  'PROMETHEUS',
  'OTLP_GRPC',
  'OTLP_HTTP',
  'GATEWAY_METRICS',
  'COLLECTOR_HEALTH',
  'COLLECTOR_TELEMETRY',
  'NODE_METRICS',
  'NODE_MONITORING',
  'CLUSTER_METRICS',
  'CLUSTER_MONITORING',
] as const;

type Row = { metric: Record<string, string>; value: [number, string] };

describe.runIf(shouldRunCollector() && shouldRun(prometheus))('scripts/demo-stack.sh', { timeout: 240_000 }, () => {
  let child: ChildProcess;
  let dir: string;
  let log = '';
  const ports: Record<string, number> = {};

  const query = async (expr: string): Promise<Row[]> => {
    const res = await fetch(`http://127.0.0.1:${ports.PROMETHEUS}/api/v1/query?query=${encodeURIComponent(expr)}`);
    return ((await res.json()) as { data: { result: Row[] } }).data.result;
  };
  const rows = (expr: string): Promise<Row[]> =>
    waitFor(
      `${expr} in the stack's Prometheus`,
      async () => {
        if (child.exitCode !== null) throw new Error(`the script exited (${child.exitCode}):\n${log}`);
        const r = await query(expr);
        return r.length > 0 ? r : undefined;
      },
      120_000,
    );

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-demo-stack-test-'));
    const env: Record<string, string> = { ...(process.env as Record<string, string>), OTELCOL: collectorPath() };
    for (const p of PORTS) {
      ports[p] = await freePort();
      env[`DEMO_STACK_${p}_PORT`] = String(ports[p]);
    }
    env.DEMO_STACK_DIR = path.join(dir, 'state');
    child = spawn('bash', ['scripts/demo-stack.sh', '--otlp-interval', '1s'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-8000)));
    child.stderr?.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-8000)));
  });

  afterAll(async () => {
    if (child) await stopChild(child);
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("delivers the node agent's series through the Collector, labelled as compose labels them", async () => {
    const r = await rows('ib_slurm_port_attribution{job="slurm-otel-node",instance="gpu-001",status="sole"} == 1');
    expect(r.every((x) => x.metric.slurm_cluster === 'demo')).toBe(true);
    expect(new Set(r.map((x) => x.metric.device))).toEqual(new Set(['mlx5_0', 'mlx5_2']));
  });

  it("delivers the cluster agent's series through the Collector", async () => {
    const r = await rows('slurm_node_info{job="slurm-otel-cluster",slurm_cluster="demo"}');
    expect(r.map((x) => x.metric.node_name)).toContain('gpu-001');
  });

  it("scrapes both agents' self-monitoring and the Collector's own telemetry from compose's target files", async () => {
    for (const job of ['slurm-otel-node-self', 'slurm-otel-cluster-self', 'otel-collector'])
      expect(await rows(`up{job="${job}"} == 1`), job).toHaveLength(1);
    await rows('ib_slurm_exporter_otlp_exports_total{result="success"} > 0');
  });

  it('stops the demo, the Collector and Prometheus on SIGTERM, and removes nothing it did not make', async () => {
    child.kill('SIGTERM');
    const code = await waitFor(
      'the script to exit',
      () => (child.exitCode === null ? undefined : { code: child.exitCode }),
      60_000,
    );
    expect(code, log).toEqual({ code: 0 });
    for (const p of ['PROMETHEUS', 'COLLECTOR_HEALTH', 'NODE_METRICS', 'CLUSTER_METRICS'])
      await waitFor(
        `port ${p} to close`,
        async () =>
          (await fetch(`http://127.0.0.1:${ports[p]}/`).then(
            () => false,
            () => true,
          )) || undefined,
      );
    // DEMO_STACK_DIR was given, so the state (logs, storage) stays for a look.
    expect(fs.existsSync(path.join(dir, 'state', 'prometheus.log'))).toBe(true);
  });
});
