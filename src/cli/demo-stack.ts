/**
 * What `slurm-otel demo` runs: both agents on synthetic inputs, no Slurm, no InfiniBand, no root.
 * The node agent reads a synthetic node whose counters move; the cluster agent reads a fake
 * slurmrestd serving a small moving cluster in the newest API version. The demo node's jobs run in
 * the fake cluster under the same ids, so the two agents' series join on job_id.
 * The demo command (cli/demo.ts) loads this module lazily, and tests import it: it is the one
 * module of src/ outside src/demo that may import the simulator.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { staticToken } from '../cluster/api/http/auth.js';
import { SlurmClient } from '../cluster/api/client.js';
import { startClusterAgent, type ClusterAgent } from '../cluster/agent.js';
import { OPTIONAL_SUB_COLLECTORS } from '../cluster/snapshot.js';
import { FakeCluster } from '../demo/fake-cluster.js';
import { startFakeSlurmrestd, type FakeSlurmrestd } from '../demo/fake-slurmrestd.js';
import { writeTree, type TreeLayout } from '../demo/nodetree.js';
import { FakeRdma } from '../demo/fake-rdma.js';
import { demoGpuAllocation } from '../demo/fake-slurm-gres.js';
import { fakeTopology } from '../demo/fake-topology.js';
import { CounterDrift, DEMO_JOBS, DEMO_NODE, demoTree, QpDrift, UsageDrift } from '../demo/scenarios.js';
import { startNodeAgent, type NodeAgent } from '../node/agent.js';
import type { Cycle } from '../node/join/cycle.js';
import type { BindAddress } from '../telemetry/http.js';
import { runUntilSignal } from './common.js';
import { demoExplainArgs, selfCommand, shellWord } from './demo-explain.js';
import type { DemoFlags, DemoLayout } from './demo-flags.js';
import { demoDisabledMetrics } from './disable-metrics.js';
import { cycleAgentOptions, type TreelessAgentOptions } from './node.js';
import type { Env } from './otel.js';

/** The demo command offers every layout the synthetic trees have, and only those (checked by the compiler). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _layoutsAgree: Same<DemoLayout, TreeLayout> = true;

export interface DemoOptions {
  /** The node agent's options; the tree is the demo's, and so is the rdma tool unless qpCounters names one. */
  readonly node: TreelessAgentOptions;
  readonly layout: TreeLayout;
  readonly nonJobHolder: boolean;
  /** Where to write the synthetic tree; a temporary directory (removed on stop) when undefined. */
  readonly dir?: string;
  readonly tickMs: number;
  /** The cluster agent's endpoints; no cluster agent when undefined. */
  readonly cluster?: {
    readonly metrics: BindAddress;
    readonly monitoring: BindAddress;
    /** The cluster families --disable-metrics turns off. */
    readonly disabledMetrics?: ReadonlySet<string>;
  };
}

export interface DemoStack {
  readonly dir: string;
  /** `slurm-otel explain`'s arguments for the demo's tree: the same statuses as its node agent's. */
  readonly explainArgs: readonly string[];
  readonly node: NodeAgent;
  readonly firstCycle: Cycle;
  readonly cluster?: ClusterAgent;
  readonly slurmrestd?: FakeSlurmrestd;
  stop(): Promise<void>;
}

const DEMO_TOKEN = 'demo-token';

/** Starts the whole demo; the tests and `npm run demo` share it. */
export async function startDemo(o: DemoOptions): Promise<DemoStack> {
  const dir = o.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-demo-'));
  const tree = demoTree({ layout: o.layout, nonJobHolder: o.nonJobHolder, gpus: true, usage: true });
  const roots = writeTree(dir, tree);
  const drift = new CounterDrift(roots.sysfs);
  const usage = new UsageDrift(roots.cgroupfs, tree);
  // A stand-in rdma serves per-PID QP counters of the jobs sharing mlx5_1.
  const rdmaDir = path.join(dir, 'rdma-tool');
  fs.mkdirSync(rdmaDir, { recursive: true });
  const rdma = new FakeRdma(rdmaDir);
  const qp = new QpDrift(rdma);
  const tick = (seconds: number) => {
    drift.tick(seconds);
    usage.tick(seconds);
    qp.tick(seconds);
  };
  tick(60);
  const timer = setInterval(() => tick(o.tickMs / 1000), o.tickMs);
  // Run by /bin/sh: the demo's directory may be mounted noexec (the compose file's /tmp), and the
  // single executable has no Node to run a script with.
  const qpCounters = o.node.qpCounters ?? { ...rdma.viaShell, mode: 'observe' as const, timeoutMs: 5_000 };
  // The host's list of verbs contexts names the host's processes, not the synthetic tree's.
  const { contexts: _host, ...collector } = o.node.collector;
  const gpuAllocation = demoGpuAllocation(path.join(dir, 'slurm-tools'), roots.devices);
  const slurmTool = gpuAllocation.slurmd.leadingArgs?.[0] ?? gpuAllocation.slurmd.path;
  const explainArgs = demoExplainArgs({ dir, roots, devices: roots.devices, slurmTool, nodeName: DEMO_NODE });
  const node = await startNodeAgent({ ...o.node, qpCounters, gpuAllocation, collector: { ...collector, roots } });
  await node.ready();
  const firstCycle = node.last() as Cycle;
  const cluster = o.cluster ? await startClusterSide(o, o.cluster) : undefined;
  return {
    dir,
    explainArgs,
    node,
    firstCycle,
    cluster: cluster?.agent,
    slurmrestd: cluster?.server,
    async stop() {
      clearInterval(timer);
      await Promise.all([node.stop(), cluster?.agent.stop()]);
      await cluster?.server.close();
      if (!o.dir) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function startClusterSide(o: DemoOptions, binds: NonNullable<DemoOptions['cluster']>) {
  const fake = new FakeCluster({ startMs: Date.now(), pinned: { node: DEMO_NODE, jobs: DEMO_JOBS } });
  const server = await startFakeSlurmrestd({
    cluster: fake,
    versions: ['v0.0.45', 'v0.0.44'],
    host: '127.0.0.1',
    port: 0,
    token: DEMO_TOKEN,
    clock: Date.now,
  });
  const { logger } = o.node;
  const api = new SlurmClient({
    server: server.url,
    tokenSource: staticToken({ token: DEMO_TOKEN, userName: 'root' }),
    requestTimeoutMs: 10_000,
    logger,
  });
  const agent = await startClusterAgent({
    source: {
      api,
      jobSource: 'controller',
      accountingLookbackMs: 3_600_000,
      clusterName: fake.clusterName,
      // Every optional sub-collector on, so that the demo shows all the families: the fake serves
      // each endpoint, and the topology comes from a stand-in for the Kubernetes API.
      optional: OPTIONAL_SUB_COLLECTORS,
      accountingLimits: true,
      topology: () => Promise.resolve(fakeTopology(fake)),
    },
    collectionIntervalMs: o.node.collectionIntervalMs,
    maxInflight: 1,
    metrics: binds.metrics,
    monitoring: binds.monitoring,
    resource: {
      ...o.node.resource,
      serviceName: 'slurm-otel-cluster',
      attributes: { 'slurm.cluster': fake.clusterName },
    },
    otlp: o.node.otlp,
    security: o.node.security,
    disabledMetrics: binds.disabledMetrics,
    logger,
    serverLabel: `${server.url} (fake slurmrestd)`,
    close: () => api.close(),
  });
  await agent.ready();
  return { agent, server };
}

/** The demo command's action: starts the stack, prints where to look, stops on a signal. */
export async function runDemo(f: DemoFlags, env: Env): Promise<void> {
  const disabled = demoDisabledMetrics(f.disableMetrics);
  const node = { ...cycleAgentOptions(f, env), disabledMetrics: disabled.node };
  const start = () =>
    startDemo({
      node,
      layout: f.layout,
      nonJobHolder: f.nonJobHolder ?? false,
      dir: f.dir,
      tickMs: f.tick,
      cluster: f.cluster
        ? {
            metrics: f.clusterMetricsBindAddress,
            monitoring: f.clusterMonitoringBindAddress,
            disabledMetrics: disabled.cluster,
          }
        : undefined,
    });
  await runUntilSignal(start, node.logger, (demo) => process.stdout.write(summary(demo, f.layout)));
}

function summary(demo: DemoStack, layout: string): string {
  const rows = demo.firstCycle.attribution.verdicts.map(
    (v) => `  ${v.device}/${v.port}  ${v.status.padEnd(10)} jobs=[${v.jobs.join(',')}]  ${v.why}`,
  );
  const cluster = demo.cluster
    ? [
        `cluster agent (fake slurmrestd at ${demo.slurmrestd?.url}, API v0.0.45):`,
        `  landing page:     ${demo.cluster.metricsUrl}/`,
        `  metrics:          ${demo.cluster.metricsUrl}/metrics`,
        `  self-monitoring:  ${demo.cluster.monitoringUrl}/metrics`,
      ]
    : [];
  return [
    `node agent (synthetic ${DEMO_NODE}, ${layout} cgroups, tree in ${demo.dir}):`,
    `  landing page:     ${demo.node.metricsUrl}/`,
    `  metrics:          ${demo.node.metricsUrl}/metrics`,
    `  self-monitoring:  ${demo.node.monitoringUrl}/metrics`,
    ...cluster,
    `try: curl -s ${demo.node.metricsUrl}/metrics | grep -E 'ib_slurm_(job_counters_total|port_attribution)'`,
    `explain its tree: ${selfCommand(process.argv, process.execPath, process.cwd())} explain ${demo.explainArgs.map(shellWord).join(' ')}`,
    'attribution (first cycle):',
    ...rows,
    'Ctrl-C to stop.',
    '',
  ].join('\n');
}
