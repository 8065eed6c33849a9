/**
 * An OTLP-native store: Debian's VictoriaMetrics (scripts/victoria-metrics/get.sh), started with the
 * flags and the relabeling of otel-config/victoria-metrics-relabel.yml, takes (a) a node agent's
 * OTLP/HTTP push directly, (b) another node agent's push through the gateway Collector
 * (otel-config/collector-gateway.yaml as shipped, its listen addresses moved to loopback) by remote
 * write and (c) the cluster agent's push (on a fake slurmrestd) directly; OTLP/HTTP JSON it refuses,
 * and the agent counts that. Per family, what it stores equals the agent's direct /metrics with the mapping that
 * deploy/README.md documents: job, instance and slurm_cluster on every series on both paths;
 * target_info only through the gateway (VictoriaMetrics writes none for OTLP).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterRunner } from '../../src/cluster/agent.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { CounterDrift, demoTree } from '../../src/demo/scenarios.js';
import { clusterAgentOptions, fakeSlurm } from '../support/agents.js';
import { shouldRunCollector, startCollector, tokenFiles, type RunningCollector } from '../support/collector.js';
import { parseExposition, sumOf, type Sample } from '../support/exposition.js';
import { startNodeAgentProcess, type AgentProcess } from '../support/node-agent-process.js';
import { treeFlags } from '../support/node-tree.js';
import { eventuallyEqual, expectedFromDirect, line, ours } from '../support/series-lines.js';
import { freePort, stopChild, waitFor } from '../support/tools.js';
import {
  shouldRunVictoriaMetrics,
  startVictoriaMetrics,
  victoriaMetricsVersion,
  type VictoriaMetrics,
} from '../support/victoria-metrics.js';

const RELABEL = 'otel-config/victoria-metrics-relabel.yml';
const GATEWAY_CONFIG = 'otel-config/collector-gateway.yaml';
const CLUSTER = 'vmtest';
const NODE_JOB = 'slurm-otel-node';
const runVm = shouldRunVictoriaMetrics();
const runCollector = shouldRunCollector();

/**
 * The server flags the relabel file's header names (`#   -flag`), its own path pointed at the
 * repository's copy: the store runs exactly as the file tells an operator to run it.
 */
function shippedFlags(): string[] {
  const flags = [...fs.readFileSync(RELABEL, 'utf8').matchAll(/^#\s+(-\S+)\s*$/gm)].map((m) => m[1] as string);
  if (!flags.some((f) => f.startsWith('-relabelConfig='))) throw new Error(`${RELABEL}: its header lists no flags`);
  return flags.map((f) => (f.startsWith('-relabelConfig=') ? `-relabelConfig=${path.resolve(RELABEL)}` : f));
}

/**
 * What VictoriaMetrics must hold for one agent's direct scrape (deploy/README.md's mapping): through
 * the gateway as any store of the push path; pushed directly, the same but no target_info.
 */
function vmExpected(direct: readonly Sample[], instance: string, targetInfo: boolean, job = NODE_JOB): string[] {
  return expectedFromDirect(direct, { job, instance, cluster: CLUSTER, stored: true, targetInfo });
}

/** The store's log lines at level warn or above. */
const warnings = (vm: VictoriaMetrics): string[] =>
  vm
    .log()
    .split('\n')
    .filter((l) => /\t(warn|error|fatal|panic)\t/.test(l));

/** The series of the families named in `families` that one instance has in the store, as comparable lines. */
async function storedLines(vm: VictoriaMetrics, instance: string, families = ours): Promise<string[]> {
  return (await vm.query(`{__name__=~".+", instance="${instance}"}`))
    .filter((r) => families(r.metric.__name__ as string))
    .map((r) => {
      const { __name__: name, ...labels } = r.metric;
      return line(name as string, labels, r.value, true);
    });
}

/**
 * `actual` with each line that differs from its `expected` counterpart (same name and labels) only
 * in the last bits of its value replaced by that counterpart: VictoriaMetrics keeps a float as a
 * decimal mantissa and exponent, so 32307012.76699996 comes back as 32307012.766999956.
 */
function withinRounding(actual: readonly string[], expected: readonly string[]): string[] {
  const split = (l: string): [string, number] => [
    l.slice(0, l.lastIndexOf(' ')),
    Number(l.slice(l.lastIndexOf(' ') + 1)),
  ];
  const want = new Map(expected.map((l) => [split(l)[0], l]));
  return actual.map((l) => {
    const [key, value] = split(l);
    const counterpart = want.get(key);
    if (counterpart === undefined) return l;
    const other = split(counterpart)[1];
    return Math.abs(value - other) <= 1e-12 * Math.max(Math.abs(value), Math.abs(other)) ? counterpart : l;
  });
}

/** The gateway as shipped, its listen addresses on free loopback ports, remote-writing into `vm`. */
async function startGateway(dir: string, vm: VictoriaMetrics): Promise<{ gateway: RunningCollector; http: number }> {
  const [grpc, http, health, telemetry, exposition] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const gateway = await startCollector(
    GATEWAY_CONFIG,
    {
      extensions: { health_check: { endpoint: `127.0.0.1:${health}` } },
      receivers: {
        otlp: { protocols: { grpc: { endpoint: `127.0.0.1:${grpc}` }, http: { endpoint: `127.0.0.1:${http}` } } },
      },
      exporters: { prometheus: { endpoint: `127.0.0.1:${exposition}` } },
      service: {
        telemetry: {
          metrics: { readers: [{ pull: { exporter: { prometheus: { host: '127.0.0.1', port: telemetry } } } }] },
        },
      },
    },
    { SLURM_CLUSTER_NAME: CLUSTER, PROMETHEUS_REMOTE_WRITE_URL: vm.remoteWriteUrl },
    dir,
    `http://127.0.0.1:${health}/`,
  );
  return { gateway, http };
}

describe.runIf(runVm)(`VictoriaMetrics ${victoriaMetricsVersion()} (Debian)`, { timeout: 180_000 }, () => {
  let dir: string;
  let vm: VictoriaMetrics | undefined;
  let gateway: RunningCollector | undefined;
  const agents: AgentProcess[] = [];
  let roots: ReturnType<typeof writeTree>;
  const TOKEN = 'victoria-metrics-test-token';
  let slurm: Awaited<ReturnType<typeof fakeSlurm>> | undefined;
  let runner: ClusterRunner | undefined;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-victoria-metrics-'));
    // A still node: its counters moved once and then stay, so the store and /metrics agree.
    roots = writeTree(path.join(dir, 'tree'), demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
    new CounterDrift(roots.sysfs).tick(5);
    vm = await startVictoriaMetrics(dir, shippedFlags());
  });

  afterAll(async () => {
    for (const a of agents) await stopChild(a.child);
    await runner?.shutdown();
    await slurm?.server.close();
    await gateway?.stop();
    await vm?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A node agent pushing OTLP/HTTP protobuf to `url` every second; its direct scrape once it has a device. */
  async function agentPushingTo(
    node: string,
    url: string,
    env: Record<string, string> = {},
    extra: string[] = [],
  ): Promise<Sample[]> {
    const agent = await startNodeAgentProcess(
      [...treeFlags(roots), '--node-name', node, '--otlp-endpoint', url, '--otlp-interval', '1s', ...extra],
      env,
    );
    agents.push(agent);
    // The first cycle may still be under way when /metrics first answers: wait for the device.
    return waitFor(`${node}'s first cycle`, async () => {
      const s = parseExposition(await (await fetch(agent.url)).text());
      return s.some((x) => x.name === 'ib_slurm_device_info') ? s : undefined;
    });
  }

  it('takes a node agent’s OTLP push directly: every family of its /metrics, same names, labels and values', async () => {
    const store = vm as VictoriaMetrics;
    // The cluster name comes from the agent itself: no gateway adds it on this path.
    const direct = await agentPushingTo('gpu-001', store.otlpUrl, {
      OTEL_RESOURCE_ATTRIBUTES: `slurm.cluster=${CLUSTER}`,
    });
    await eventuallyEqual(
      'the directly pushed families in VictoriaMetrics',
      vmExpected(direct, 'gpu-001', false),
      () => storedLines(store, 'gpu-001'),
      withinRounding,
    );
    // Nothing of ours outside a node: a series the relabeling missed would have no instance.
    expect(await store.query('{__name__=~"ib_slurm_.+|target_info", instance=""}')).toEqual([]);
    expect(warnings(store)).toEqual([]);
  });

  it.runIf(runCollector)(
    'takes the gateway’s remote write: every family of the agent’s /metrics, target_info included',
    async () => {
      const store = vm as VictoriaMetrics;
      const gw = await startGateway(dir, store);
      gateway = gw.gateway;
      const direct = await agentPushingTo('gpu-002', `http://127.0.0.1:${gw.http}/v1/metrics`, {}, [
        '--otlp-bearer-token-file',
        tokenFiles(dir).push,
      ]);
      await eventuallyEqual(
        'the families remote-written into VictoriaMetrics',
        vmExpected(direct, 'gpu-002', true),
        () => storedLines(store, 'gpu-002'),
        withinRounding,
      );
      expect(gw.gateway.warnings(), gw.gateway.log()).toEqual([]);
      expect(warnings(store)).toEqual([]);
    },
  );

  it('takes the cluster agent’s OTLP push directly (a fake slurmrestd): every family of its /metrics', async () => {
    const store = vm as VictoriaMetrics;
    slurm = await fakeSlurm(['v0.0.44'], TOKEN);
    const options = clusterAgentOptions(slurm, TOKEN, { otlpUrl: store.otlpUrl });
    // As OTEL_RESOURCE_ATTRIBUTES=slurm.cluster=<name> sets it from the command line.
    runner = new ClusterRunner({ ...options, resource: { ...options.resource, extra: `slurm.cluster=${CLUSTER}` } });
    expect((await runner.collect()).failed).toEqual([]);
    await runner.pipeline.flush();
    const direct = parseExposition(runner.pipeline.exposition.text);
    const families = new Set(direct.map((s) => s.name));
    expect(families).toContain('slurm_node_info');
    const instance = options.resource.hostName;
    await eventuallyEqual(
      'the cluster families in VictoriaMetrics',
      vmExpected(direct, instance, false, 'slurm-otel-cluster'),
      () => storedLines(store, instance, (n) => families.has(n)),
      withinRounding,
    );
    expect(warnings(store)).toEqual([]);
  });

  // Last: the store logs a warning for each refused push.
  it('refuses OTLP/HTTP JSON (protobuf only): the agent counts the failed pushes', async () => {
    const store = vm as VictoriaMetrics;
    const agent = await startNodeAgentProcess([
      ...treeFlags(roots),
      '--node-name',
      'gpu-json',
      '--otlp-endpoint',
      store.otlpUrl,
      '--otlp-protocol',
      'http/json',
      '--otlp-interval',
      '1s',
    ]);
    agents.push(agent);
    const exports = async (result: string): Promise<number> =>
      sumOf(parseExposition(await (await fetch(agent.monitoringUrl)).text()), 'ib_slurm_exporter_otlp_exports_total', {
        result,
      });
    await waitFor('refused JSON pushes counted by the agent', async () => (await exports('failure')) >= 2, 60_000);
    expect(await exports('success')).toBe(0);
    expect(await store.query('{instance="gpu-json"}')).toEqual([]);
    expect(warnings(store).join('\n')).toMatch(/json encoding isn't supported/);
  });
});
