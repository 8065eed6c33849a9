/** `slurm-otel demo`: a synthetic node (no Slurm, no InfiniBand, no root) served by the real agent. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command, Option } from 'commander';
import { CounterDrift, demoTree } from '../demo/scenarios.js';
import { writeTree, type TreeLayout } from '../demo/nodetree.js';
import { startNodeAgent } from '../node/agent.js';
import type { Cycle } from '../node/collector.js';
import { addNodeOptions, nodeAgentOptions, type NodeFlags } from './node.js';
import type { Env } from './otel.js';
import { oneOf, positiveDuration } from './values.js';
import { waitForSignal } from './common.js';

interface DemoFlags extends NodeFlags {
  layout: TreeLayout;
  nonJobHolder?: boolean;
  dir?: string;
  tick: number;
}

export function demoCommand(env: Env): Command {
  const cmd = new Command('demo').description('serve real metrics from a synthetic node tree whose counters move');
  addNodeOptions(cmd, { collectionInterval: [5_000, '5s'], metricsBind: '127.0.0.1:9836', monitoringBind: '127.0.0.1:9837', logFormat: 'plain' });
  return cmd
    .addOption(new Option('--layout <layout>', 'cgroup layout of the synthetic node').choices(['v1', 'v2', 'v2-sluid']).default('v2-sluid'))
    .option('--non-job-holder', 'a storage client outside Slurm holds mlx5_3')
    .option('--dir <dir>', 'where to write the synthetic tree (default: a new temporary directory)')
    .addOption(new Option('--tick <duration>', 'how often the demo counters move').default(1_000, '1s').argParser(positiveDuration))
    .action(async (f: DemoFlags) => {
      const dir = f.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-demo-'));
      const roots = writeTree(dir, demoTree({ layout: f.layout, nonJobHolder: f.nonJobHolder ?? false }));
      const drift = new CounterDrift(roots.sysfs);
      drift.tick(60);
      const timer = setInterval(() => drift.tick(f.tick / 1000), f.tick);
      const agent = await startNodeAgent(nodeAgentOptions({ ...f, sysfsRoot: roots.sysfs, procfsRoot: roots.procfs, cgroupRoot: roots.cgroupfs }, env));
      const first = await agent.cycleNow();
      process.stdout.write(summary(dir, f.layout, agent.metricsUrl, agent.monitoringUrl, first));
      await waitForSignal();
      clearInterval(timer);
      await agent.stop();
      if (!f.dir) fs.rmSync(dir, { recursive: true, force: true });
    });
}

function summary(dir: string, layout: string, metricsUrl: string, monitoringUrl: string, c: Cycle): string {
  const rows = c.attribution.verdicts.map((v) => `  ${v.device}/${v.port}  ${v.status.padEnd(10)} jobs=[${v.jobs.join(',')}]  ${v.why}`);
  return [
    `slurm-otel demo: synthetic node (${layout} cgroups) in ${dir}`,
    `  metrics:          ${metricsUrl}/metrics`,
    `  self-monitoring:  ${monitoringUrl}/metrics`,
    `  try: curl -s ${metricsUrl}/metrics | grep -E 'ib_slurm_(job_counters_total|port_attribution)'`,
    'attribution (first cycle):',
    ...rows,
    'Ctrl-C to stop.',
    '',
  ].join('\n');
}
