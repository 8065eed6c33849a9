/**
 * `slurm-otel demo`: both agents on synthetic inputs, no Slurm, no InfiniBand,
 * no root. The command's options are defined here; the simulator (src/demo) is
 * loaded by its action only, so an agent process (`node`, `cluster`) never
 * carries the fake slurmrestd and the synthetic trees.
 */
import { Command, Option } from 'commander';
import { DEMO_LAYOUTS, DEMO_REFUSED, type DemoFlags } from './demo-flags.js';
import { disableMetricsOption } from './disable-metrics.js';
import { addExportOptions } from './export-options.js';
import { addCycleOptions, type NodeDefaults } from './node.js';
import type { Env } from './otel.js';
import { keepRefusals, refusals, SettingErrors } from './settings.js';
import { bindAddress, positiveDuration } from './values.js';

/** The synthetic node's name (src/demo's DEMO_NODE; a test keeps the two equal). */
export const DEMO_NODE_NAME = 'gpu-001';

const REFUSED_FLAGS: ReadonlySet<string> = new Set(Object.values(DEMO_REFUSED));

/** What --help says after the options: what the demo runs, and what it does not take. */
const DEMO_HELP = `
The demo writes its own synthetic node (sysfs, procfs and cgroup trees, in --dir or a temporary
directory), moves its counters every --tick, and serves per-PID QP counters from its own stand-in
rdma tool; its node agent reads that tree and that tool, never the host's. Unless --no-cluster, a
cluster agent with every optional sub-collector on reads a fake slurmrestd on loopback (and a
stand-in for Soperator's Kubernetes topology) whose cluster runs the same jobs, so the two agents'
series join on job_id.
It does not take ${[...REFUSED_FLAGS].join(', ')}:
they point the node agent at a real node (slurm-otel node).`;

/**
 * A command that refuses the node options naming the host with a message saying why, instead of
 * commander's bare "unknown option". unknownOption is commander's own hook for that (a test keeps it).
 */
class DemoCommand extends Command {
  unknownOption(flag: string): void {
    const [name] = flag.split('=', 1) as [string];
    if (REFUSED_FLAGS.has(name)) {
      // error() ends the parse, or, where the usage errors are kept (settings.ts), records and returns.
      this.error(
        `error: the demo does not take ${name}: it makes its own node tree and its own rdma tool, and reads nothing of this host's (slurm-otel node reads a real node)`,
        { code: 'commander.unknownOption' },
      );
      return;
    }
    // Commander's own method (JavaScript, not in its typings): the usual message for any other option.
    (Command.prototype as unknown as { unknownOption(f: string): void }).unknownOption.call(this, flag);
  }
}

export function demoCommand(env: Env): Command {
  const cmd = new DemoCommand('demo')
    .description('both agents on a synthetic node and a fake slurmrestd, with moving counters')
    .addHelpText('after', DEMO_HELP);
  const defaults: NodeDefaults = {
    collectionInterval: [5_000, '5s'],
    metricsBind: '127.0.0.1:9836',
    monitoringBind: '127.0.0.1:9837',
    logFormat: 'plain',
    nodeName: DEMO_NODE_NAME,
  };
  addExportOptions(addCycleOptions(cmd, defaults), 'IB_SLURM_EXPORTER_', defaults);
  cmd
    .addOption(disableMetricsOption('IB_SLURM_EXPORTER_'))
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
    );
  return keepRefusals(cmd).action(async (f: DemoFlags, self: Command) => {
    // Every unknown, refused or bad option at once, as the agents report theirs (settings.ts).
    new SettingErrors(refusals(self)).throwIfAny();
    // Loaded here, not at the top: only this command needs the simulator.
    const { runDemo } = await import('./demo-stack.js');
    await runDemo(f, env);
  });
}
