/**
 * Two gateway replicas behind a round-robin front (Debian's haproxy, balancing each HTTP request),
 * as deploy/README.md scales the push path: two node agents and the cluster agent (its push cut
 * into many requests) push through the front; both replicas take part, and the store holds every
 * series of every agent exactly once, with the values of the agents' direct /metrics.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterRunner } from '../../src/cluster/agent.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { CounterDrift, demoTree } from '../../src/demo/scenarios.js';
import { clusterAgentOptions, fakeSlurm } from '../support/agents.js';
import { shouldRunCollector, startCollector, tokenFiles, type RunningCollector } from '../support/collector.js';
import { listenOn, ports, remoteWriteStore, type Ports } from '../support/collector-chain.js';
import { parseExposition, sumOf, type Sample } from '../support/exposition.js';
import { startNodeAgentProcess, type AgentProcess } from '../support/node-agent-process.js';
import { treeFlags } from '../support/node-tree.js';
import type { PrometheusServer } from '../support/prometheus.js';
import { eventuallyEqual, expectedFromDirect, line } from '../support/series-lines.js';
import { findTool, freePort, shouldRun, stopChild, toolPath, waitFor } from '../support/tools.js';

const GATEWAY_CONFIG = 'otel-config/collector-gateway.yaml';
const CLUSTER = 'replicas';
const TOKEN = 'gateway-replicas-token';
const prometheus = findTool('prometheus', 'prometheus');
const haproxy = findTool('haproxy', 'haproxy');

/** haproxy in the foreground, balancing every request over `backends` in turn. */
async function startFront(dir: string, backends: readonly number[]): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const config = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(
    config,
    [
      'global',
      '  maxconn 256',
      'defaults',
      '  mode http',
      '  timeout connect 5s',
      '  timeout client 60s',
      '  timeout server 60s',
      'frontend otlp',
      `  bind 127.0.0.1:${port}`,
      '  default_backend gateways',
      'backend gateways',
      '  balance roundrobin',
      ...backends.map((p, i) => `  server gw${i} 127.0.0.1:${p}`),
      '',
    ].join('\n'),
  );
  const child = spawn(toolPath(haproxy), ['-db', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  await waitFor(`haproxy on ${port}`, async () => {
    if (child.exitCode !== null) throw new Error(`haproxy exited (${child.exitCode}): ${log}`);
    return (await fetch(`http://127.0.0.1:${port}/`).catch(() => undefined)) !== undefined || undefined;
  });
  return { port, child };
}

const accepted = async (p: Ports): Promise<number> =>
  sumOf(
    parseExposition(await (await fetch(`http://127.0.0.1:${p.telemetry}/metrics`)).text()),
    'otelcol_receiver_accepted_metric_points',
  );

/** The series Prometheus holds of the families `names` has, as comparable lines. */
async function storedLines(prom: PrometheusServer, names: ReadonlySet<string>): Promise<string[]> {
  return (await prom.query('{__name__=~".+"}'))
    .filter((r) => names.has(r.metric.__name__ as string))
    .map((r) => {
      const { __name__: name, ...labels } = r.metric;
      return line(name as string, labels, r.value[1]);
    });
}

describe.runIf(shouldRunCollector() && shouldRun(prometheus) && shouldRun(haproxy))(
  'two gateway replicas behind haproxy',
  { timeout: 240_000 },
  () => {
    let dir: string;
    let prom: PrometheusServer | undefined;
    const gateways: RunningCollector[] = [];
    const gatewayPorts: Ports[] = [];
    let front: { port: number; child: ChildProcess } | undefined;
    const agents: AgentProcess[] = [];
    let slurm: Awaited<ReturnType<typeof fakeSlurm>> | undefined;
    let runner: ClusterRunner | undefined;
    const direct = new Map<string, { job: string; samples: Sample[] }>();

    beforeAll(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-gateway-replicas-'));
      prom = await remoteWriteStore(dir);
      for (let i = 0; i < 2; i++) {
        const p = await ports();
        gatewayPorts.push(p);
        const exposition = await freePort();
        gateways.push(
          await startCollector(
            GATEWAY_CONFIG,
            listenOn(p, { exporters: { prometheus: { endpoint: `127.0.0.1:${exposition}` } } }),
            { SLURM_CLUSTER_NAME: CLUSTER, PROMETHEUS_REMOTE_WRITE_URL: `${prom.url}/api/v1/write` },
            fs.mkdtempSync(path.join(dir, `gw${i}-`)),
            `http://127.0.0.1:${p.health}/`,
          ),
        );
      }
      front = await startFront(
        dir,
        gatewayPorts.map((p) => p.http),
      );
      const url = `http://127.0.0.1:${front.port}/v1/metrics`;

      // A still node tree: the values every path sees are the same.
      const roots = writeTree(path.join(dir, 'tree'), demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
      new CounterDrift(roots.sysfs).tick(5);
      for (const node of ['gpu-001', 'gpu-002']) {
        const agent = await startNodeAgentProcess([
          ...treeFlags(roots),
          '--node-name',
          node,
          '--otlp-endpoint',
          url,
          '--otlp-interval',
          '1s',
          '--otlp-bearer-token-file',
          tokenFiles(dir).push,
        ]);
        agents.push(agent);
        const samples = await waitFor(`${node}'s first cycle`, async () => {
          const s = parseExposition(await (await fetch(agent.url)).text());
          return s.some((x) => x.name === 'ib_slurm_device_info') ? s : undefined;
        });
        direct.set(node, { job: 'slurm-otel-node', samples });
      }

      // The cluster agent's push, cut into requests of 16 KiB: the front spreads them over both.
      slurm = await fakeSlurm(['v0.0.44'], TOKEN);
      const options = clusterAgentOptions(slurm, TOKEN, { otlpUrl: url, otlpBearerTokenFile: tokenFiles(dir).push });
      runner = new ClusterRunner({ ...options, otlp: { ...options.otlp!, maxRequestBytes: 16 * 1024 } });
      expect((await runner.collect()).failed).toEqual([]);
      await runner.pipeline.flush();
      direct.set('test', { job: 'slurm-otel-cluster', samples: parseExposition(runner.pipeline.exposition.text) });
    });

    afterAll(async () => {
      await runner?.shutdown();
      await slurm?.server.close();
      for (const a of agents) await stopChild(a.child);
      if (front) await stopChild(front.child);
      for (const g of gateways) await g.stop();
      await prom?.stop();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it('both replicas take pushes', async () => {
      for (const [i, p] of gatewayPorts.entries())
        await waitFor(`gateway ${i} to accept points`, async () => (await accepted(p)) > 0 || undefined, 60_000);
    });

    it('the store holds every series of every agent once, with its direct value', async () => {
      const names = new Set([...direct.values()].flatMap((d) => d.samples.map((s) => s.name)));
      const expected = [...direct].flatMap(([instance, d]) =>
        expectedFromDirect(d.samples, { job: d.job, instance, cluster: CLUSTER, stored: true }),
      );
      // target_info comes once per replica that wrote for an agent: the same labels, one series.
      await eventuallyEqual('every series in the store', expected, () => storedLines(prom!, names));
    });

    it('neither replica logged a warning', () => {
      for (const g of gateways) expect(g.warnings(), g.log()).toEqual([]);
    });
  },
);
