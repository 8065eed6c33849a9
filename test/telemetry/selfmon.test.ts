/**
 * The process families (process_*, nodejs_*) on both agents' self-monitoring endpoints, read from
 * the running test process itself: real memory, real CPU time, real /proc/self/fd.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemo, type DemoStack } from '../../src/cli/demo-stack.js';
import { DEMO_NODE } from '../../src/demo/scenarios.js';
import { DEFAULT_HTTP_LIMITS } from '../../src/telemetry/http.js';
import { AUTH_THROTTLE_REASONS, CONNECTION_CLOSE_REASONS } from '../../src/telemetry/http-guard.js';
import { PROCESS_METRICS } from '../../src/telemetry/process-metrics.js';
import { prometheusName } from '../../src/telemetry/spec.js';
import { nodeAgentOptions } from '../support/agents.js';
import { parseExposition, select, valueOf, type Sample } from '../support/exposition.js';
import { startReceiver, type Receiver } from '../support/otlp-receiver.js';
import { waitFor } from '../support/tools.js';

let demo: DemoStack;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  const loopback = { host: '127.0.0.1', port: 0 };
  const unused = { sysfs: '/nonexistent', procfs: '/nonexistent', cgroupfs: '/nonexistent' };
  const otlp = {
    url: `${receiver.url}/v1/metrics`,
    protocol: 'http/protobuf' as const,
    intervalMs: 200,
    timeoutMs: 2000,
  };
  const node = nodeAgentOptions(unused, {
    collectionIntervalMs: 500,
    otlp,
    resource: { serviceName: 'slurm-otel-node', serviceVersion: 'test', hostName: DEMO_NODE },
  });
  demo = await startDemo({
    node,
    layout: 'v2-sluid',
    nonJobHolder: false,
    tickMs: 250,
    cluster: { metrics: loopback, monitoring: loopback },
  });
});

afterAll(async () => {
  await demo?.stop();
  await receiver?.close();
});

async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  return parseExposition(await res.text());
}

const endpoints = (): [string, string][] => [
  ['node', demo.node.monitoringUrl],
  ['cluster', demo.cluster?.monitoringUrl ?? 'no cluster agent'],
];
const v = (samples: Sample[], name: string): number => {
  const x = valueOf(samples, name);
  if (x === undefined) throw new Error(`${name} missing`);
  return x;
};

describe.each(['node', 'cluster'])('the %s agent self-monitoring endpoint', (which) => {
  const url = (): string => (endpoints().find(([w]) => w === which) as [string, string])[1];

  it('serves every gauge and counter of the process catalogue, each once', async () => {
    const samples = await scrape(url());
    for (const spec of Object.values(PROCESS_METRICS).filter((s) => s.kind !== 'histogram')) {
      expect(select(samples, prometheusName(spec)), spec.name).toHaveLength(1);
    }
  });

  it('has plausible memory, descriptors and start time', async () => {
    const s = await scrape(url());
    expect(v(s, 'process_resident_memory_bytes')).toBeGreaterThan(10 * 1024 * 1024);
    expect(v(s, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(1024 * 1024);
    expect(v(s, 'nodejs_heap_size_total_bytes')).toBeGreaterThanOrEqual(v(s, 'nodejs_heap_size_used_bytes'));
    // Both agents' listening sockets at least.
    expect(v(s, 'process_open_fds')).toBeGreaterThan(2);
    expect(v(s, 'process_max_fds')).toBeGreaterThanOrEqual(v(s, 'process_open_fds'));
    const start = v(s, 'process_start_time_seconds');
    expect(start).toBeLessThanOrEqual(Date.now() / 1000);
    expect(start).toBeCloseTo(Date.now() / 1000 - process.uptime(), 0);
  });

  it(
    'counts CPU seconds that grow with work, GC pauses, and event-loop delay since the last scrape',
    { timeout: 90_000 },
    async () => {
      const before = v(await scrape(url()), 'process_cpu_seconds_total');
      const cpuBefore = process.cpuUsage();
      const cpuSpent = (): number => {
        const d = process.cpuUsage(cpuBefore);
        return (d.user + d.system) / 1e6;
      };
      const blockedFrom = Date.now();
      const junk: object[] = [];
      // Busy work on the event loop until it has both stalled the loop 150 ms and spent 50 ms of CPU
      // (on a loaded machine the wall time is not all CPU time): young-generation GCs on the way.
      while (Date.now() - blockedFrom < 150 || cpuSpent() < 0.05)
        junk.push({ at: Date.now(), pad: new Array(16).fill(0) });
      expect(junk.length).toBeGreaterThan(0);
      // The stall is recorded at the histogram's next tick, which may come after a prompt scrape
      // (that scrape then resets the histogram first): some scrape from now on shows it.
      const after = await waitFor('a scrape showing the 150 ms stall', async () => {
        const s = await scrape(url());
        return v(s, 'nodejs_eventloop_delay_max_seconds') > 0.1 ? s : undefined;
      });
      expect(v(after, 'process_cpu_seconds_total') - before).toBeGreaterThanOrEqual(0.05);
      expect(v(after, 'nodejs_eventloop_delay_p99_seconds')).toBeGreaterThan(0);
      const minor = select(after, 'nodejs_gc_duration_seconds_count', { kind: 'minor' });
      expect(minor[0]?.value ?? 0).toBeGreaterThan(0);
      // Reset at each scrape: without it the 150 ms stall would stay the maximum forever. A loaded
      // machine may stall the loop too, so wait for a scrape after a quieter interval.
      await waitFor('a scrape after a quieter interval', async () =>
        v(await scrape(url()), 'nodejs_eventloop_delay_max_seconds') < 0.1 ? true : undefined,
      );
    },
  );
});

describe.each(['node', 'cluster'])('the %s agent endpoints under pressure', (which) => {
  const agent = () => (which === 'node' ? demo.node : demo.cluster);
  const closed = (samples: Sample[]): number =>
    valueOf(samples, 'slurm_otel_http_connections_closed_total', { endpoint: 'metrics', reason: 'evicted_address' }) ??
    NaN;

  it('counts, on its own self-monitoring endpoint, every reason from 0 and a connection closed to make room', async () => {
    const a = agent();
    if (!a) throw new Error('no cluster agent');
    const before = await scrape(a.monitoringUrl);
    for (const endpoint of ['metrics', 'monitoring']) {
      for (const reason of CONNECTION_CLOSE_REASONS)
        expect(select(before, 'slurm_otel_http_connections_closed_total', { endpoint, reason }), reason).toHaveLength(
          1,
        );
      for (const reason of AUTH_THROTTLE_REASONS)
        expect(select(before, 'slurm_otel_http_auth_throttled_total', { endpoint, reason }), reason).toHaveLength(1);
    }
    // More connections without a request than one address may hold: once they have lingered, the
    // next newcomer makes its oldest one close.
    const { port } = new URL(a.metricsUrl);
    const localAddress = which === 'node' ? '127.0.0.21' : '127.0.0.22';
    const open = (): net.Socket =>
      net.connect({ port: Number(port), host: '127.0.0.1', localAddress }).on('error', () => undefined);
    const sockets = Array.from({ length: DEFAULT_HTTP_LIMITS.maxUnfinishedPerAddress }, open);
    try {
      await waitFor('the oldest connection closed', () => {
        if (sockets.length < DEFAULT_HTTP_LIMITS.maxConnectionsPerAddress) sockets.push(open());
        return sockets[0]?.destroyed || undefined;
      });
      await waitFor(
        'the closing counted',
        async () => closed(await scrape(a.monitoringUrl)) > closed(before) || undefined,
      );
    } finally {
      for (const s of sockets) s.destroy();
    }
  });
});

describe('self-monitoring and OTLP', () => {
  it('pushes the agent families but none of the process families', async () => {
    await waitFor('an OTLP push of the job counters', () =>
      receiver.requests.some((r) => r.points.some((p) => p.metric === 'ib_slurm_job_counters')),
    );
    const pushed = new Set(receiver.requests.flatMap((r) => r.points.map((p) => p.metric)));
    for (const spec of Object.values(PROCESS_METRICS)) expect(pushed.has(spec.name), spec.name).toBe(false);
  });
});
