import fs from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startNodeAgent, type NodeAgent, type NodeAgentOptions } from '../../src/node/agent.js';
import { NODE_METRICS, NODE_SELF_METRICS } from '../../src/node/metrics.js';
import { demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { demoGpuAllocation } from '../../src/demo/fake-slurm-gres.js';
import { prometheusName } from '../../src/telemetry/spec.js';
import { startReceiver, type Receiver } from '../support/otlp-receiver.js';
import { nodeAgentOptions } from '../support/agents.js';
import { RecordingRdma } from '../support/recording-rdma.js';
import { asUnprivilegedAsync, deny, tmpDir } from '../support/tmp.js';
import { waitFor } from '../support/tools.js';

let agent: NodeAgent | undefined;
let receiver: Receiver | undefined;

afterEach(async () => {
  await agent?.stop();
  await receiver?.close();
  agent = receiver = undefined;
});

function options(extra: Partial<NodeAgentOptions> = {}): NodeAgentOptions {
  return nodeAgentOptions(writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: true })), {
    collectionIntervalMs: 3_600_000,
    ...extra,
  });
}

function get(
  url: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('node agent over HTTP', () => {
  it('serves the last cycle on /metrics, with gzip when asked, and /health', async () => {
    // The rdma cgroup controller on job 918001 and per-PID QP counters of job 918002, so every family has points.
    // The demo's stand-in GPUs (held, idle, far from their HCA) and its jobs' CPU and memory use.
    const withGpu = demoTree({ layout: 'v2-sluid', nonJobHolder: true, gpus: true, usage: true });
    const jobs = withGpu.jobs.map((j, i) => (i === 0 ? { ...j, rdma: { mlx5_0: { handles: 1, objects: 30 } } } : j));
    const rdma = new RecordingRdma(tmpDir('fake-rdma-'));
    rdma.counters([
      {
        ifname: 'mlx5_1',
        port: 1,
        cntn: 1,
        pid: 42010,
        counters: { rx_write_requests: 5, rdma_tx_bytes: 100, rdma_rx_bytes: 90 },
        lqpn: [7],
      },
    ]);
    rdma.resources([{ ifname: 'mlx5_1', port: 1, pid: 42010, lqpn: 7 }]);
    const qpCounters = { path: rdma.path, mode: 'observe', timeoutMs: 5000 } as const;
    const tree = writeTree(tmpDir(), { ...withGpu, jobs });
    // Slurm's allocation from stand-in slurmd and scontrol: 918004 was given nvidia3 and holds nothing on it.
    const gpuAllocation = demoGpuAllocation(tmpDir('slurm-tools-'), tree.devices);
    agent = await startNodeAgent({
      ...nodeAgentOptions(tree, { collectionIntervalMs: 3_600_000, qpCounters }),
      gpuAllocation,
    });
    await waitFor('a first cycle', () => agent?.last() !== undefined);
    // The QP reading arrives in the background: cycle until a cycle has it.
    const qpPoints = async () =>
      (await (agent as NodeAgent).cycleNow()).families.find((f) => f.spec === NODE_METRICS.jobQpCounters)?.points
        .length ?? 0;
    await waitFor('a cycle with the QP reading', async () => (await qpPoints()) > 0);
    const allocated = async () =>
      (await (agent as NodeAgent).cycleNow()).families.find((f) => f.spec === NODE_METRICS.jobGpuAllocated)?.points
        .length ?? 0;
    await waitFor('a cycle with Slurm’s GPU allocation', async () => (await allocated()) === 4);
    const plain = await get(`${agent.metricsUrl}/metrics`);
    expect(plain.status).toBe(200);
    expect(plain.headers['content-type']).toContain('text/plain; version=0.0.4');
    const text = plain.body.toString();
    const missing = Object.values(NODE_METRICS)
      .map(prometheusName)
      .filter((name) => !text.includes(`# TYPE ${name} `));
    expect(missing).toEqual([]);
    expect(text).toMatch(/ib_slurm_port_attribution\{device="mlx5_1",port="1",status="shared"\} 1/);
    expect(text).toMatch(/ib_slurm_port_attribution\{device="mlx5_3",port="1",status="nonjob"\} 1/);
    expect(text).toMatch(
      /ib_slurm_job_counters_total\{job_id="918001",device="mlx5_0",port="1",counter="packet_seq_err"\} 0/,
    );
    expect(text).toMatch(/^ib_slurm_job_rdma_handles\{job_id="918001",device="mlx5_0"\} 1$/m);
    expect(text).toMatch(
      /^ib_slurm_job_qp_counters_total\{job_id="918002",device="mlx5_1",port="1",counter="rx_write_requests"\} 0$/m,
    );
    expect(text).toMatch(/^ib_slurm_job_qp_transmit_bytes_total\{job_id="918002",device="mlx5_1",port="1"\} 0$/m);
    const zipped = await get(`${agent.metricsUrl}/metrics`, { 'accept-encoding': 'gzip' });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(zipped.body).toString()).toBe(text);
    expect((await get(`${agent.metricsUrl}/health`)).status).toBe(200);
  });

  it('refuses anything but GET and HEAD, and unknown paths', async () => {
    agent = await startNodeAgent(options());
    expect((await get(`${agent.metricsUrl}/metrics`, {}, 'POST')).status).toBe(405);
    expect((await get(`${agent.metricsUrl}/nope`)).status).toBe(404);
    const head = await get(`${agent.metricsUrl}/metrics`, {}, 'HEAD');
    expect(head.body.length).toBe(0);
  });

  it('serves self-monitoring on its own endpoint, counting scrapes', async () => {
    agent = await startNodeAgent(options());
    await waitFor('a first cycle', () => agent?.last() !== undefined);
    await get(`${agent.metricsUrl}/metrics`);
    const self = (await get(`${agent.monitoringUrl}/metrics`)).body.toString();
    expect(self).toContain(`${prometheusName(NODE_SELF_METRICS.cycleDuration)} `);
    expect(self).toMatch(/ib_slurm_exporter_scrape_requests_total\{path="\/metrics"\} [1-9]/);
    expect(self).toMatch(/ib_slurm_exporter_series_exported [1-9]\d*/);
    expect(self).not.toContain('ib_slurm_job_counters');
  });

  it('pushes the same families over OTLP when an endpoint is configured', async () => {
    receiver = await startReceiver();
    agent = await startNodeAgent(
      options({
        otlp: { url: `${receiver.url}/v1/metrics`, protocol: 'http/protobuf', intervalMs: 200, timeoutMs: 2000 },
      }),
    );
    await waitFor('an OTLP push of the job counters', () =>
      receiver?.requests.some((r) => r.points.some((p) => p.metric === 'ib_slurm_job_counters')),
    );
    const req = receiver.requests.find((r) => r.points.some((p) => p.metric === 'ib_slurm_job_counters'));
    expect(req?.resource['host.name']).toBe('node1');
    expect(
      req?.points.filter((p) => p.metric === 'ib_slurm_job_counters').every((p) => p.attributes.device !== 'mlx5_1'),
    ).toBe(true);
  });

  it('keeps serving the last good data when a cycle fails, and counts the error', async () => {
    const opts = options();
    agent = await startNodeAgent(opts);
    await waitFor('a first cycle', () => agent?.last() !== undefined);
    const before = (await get(`${agent.metricsUrl}/metrics`)).body.toString();
    expect(before).toContain('ib_slurm_device_counters_total{device="mlx5_0"');
    const classDir = path.join(opts.collector.roots.sysfs, 'class/infiniband');
    deny(classDir);
    const running = agent;
    const failed = await asUnprivilegedAsync(() => running.cycleNow()).finally(() => fs.chmodSync(classDir, 0o755));
    expect(failed.failed).toMatch(/EACCES/);
    expect(agent.last()).not.toBe(failed);
    expect((await get(`${agent.metricsUrl}/metrics`)).body.toString()).toBe(before);
    const self = (await get(`${agent.monitoringUrl}/metrics`)).body.toString();
    expect(self).toMatch(/ib_slurm_exporter_cycle_errors_total\{source="sysfs",kind="denied"\} 1/);
  });

  it('fails to start with a clear error when the port is taken, and releases what it opened', async () => {
    agent = await startNodeAgent(options());
    const port = Number(new URL(agent.metricsUrl).port);
    await expect(startNodeAgent(options({ metrics: { host: '127.0.0.1', port } }))).rejects.toThrow(/EADDRINUSE/);
  });
});
