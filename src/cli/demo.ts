/**
 * `slurm-otel demo`: both agents on synthetic inputs, no Slurm, no InfiniBand,
 * no root. The command's options are defined here; the simulator (src/demo) is
 * loaded by its action only, so an agent process (`node`, `cluster`) never
 * carries the fake slurmrestd and the synthetic trees.
 */
import { Command, Option } from 'commander';
import { DEMO_LAYOUTS, type DemoFlags } from './demo-flags.js';
import { addNodeOptions } from './node.js';
import type { Env } from './otel.js';
import { bindAddress, positiveDuration } from './values.js';

/** The synthetic node's name (src/demo's DEMO_NODE; a test keeps the two equal). */
export const DEMO_NODE_NAME = 'gpu-001';

export function demoCommand(env: Env): Command {
  const cmd = new Command('demo').description(
    'both agents on a synthetic node and a fake slurmrestd, with moving counters',
  );
  addNodeOptions(cmd, {
    collectionInterval: [5_000, '5s'],
    metricsBind: '127.0.0.1:9836',
    monitoringBind: '127.0.0.1:9837',
    logFormat: 'plain',
    nodeName: DEMO_NODE_NAME,
  });
  return cmd
    .addOption(
      new Option('--layout <layout>', 'cgroup layout of the synthetic node').choices(DEMO_LAYOUTS).default('v2-sluid'),
    )
    .option('--non-job-holder', 'a storage client outside Slurm holds mlx5_3')
    .option('--dir <dir>', 'where to write the synthetic tree (default: a new temporary directory)')
    .addOption(
      new Option('--tick <duration>', 'how often the demo counters move')
        .default(1_000, '1s')
        .argParser(positiveDuration),
    )
    .option('--no-cluster', 'run the node agent only')
    .addOption(
      new Option('--cluster-metrics-bind-address <addr>', "the cluster agent's Prometheus endpoint")
        .default(bindAddress('127.0.0.1:8080'), '127.0.0.1:8080')
        .argParser(bindAddress),
    )
    .addOption(
      new Option('--cluster-monitoring-bind-address <addr>', "the cluster agent's self-monitoring endpoint")
        .default(bindAddress('127.0.0.1:8081'), '127.0.0.1:8081')
        .argParser(bindAddress),
    )
    .action(async (f: DemoFlags) => {
      // Loaded here, not at the top: only this command needs the simulator.
      const { runDemo } = await import('./demo-stack.js');
      await runDemo(f, env);
    });
}
