/**
 * `slurm-otel`: one command, two agents. Options are read in cli/ and nowhere
 * else; bad usage exits with code 2 and a message naming the option.
 */
import { Command, CommanderError } from 'commander';
import { setHelperEnvironment } from '../child-runner.js';
import { redactSecrets } from '../log.js';
import { AgentDefect, CollectionIncomplete, ConfigError, DEFECT_EXIT, VERSION } from './common.js';
import { clusterCommand } from './cluster.js';
import { demoCommand } from './demo.js';
import { explainCommand } from './explain.js';
import { nodeCommand } from './node.js';
import type { Env } from './otel.js';

/** Commands whose options docs/configuration.md documents, by the key of their generated section. */
export function documentedCommands(env: Env): Record<string, Command> {
  return {
    'node-options': nodeCommand(env),
    'cluster-options': clusterCommand(env),
    'explain-options': explainCommand(),
    'demo-options': demoCommand(env),
  };
}

export function program(env: Env): Command {
  const prog = new Command('slurm-otel')
    .description('OpenTelemetry metrics for Slurm clusters with InfiniBand/RoCE fabrics')
    .version(VERSION)
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  for (const cmd of [nodeCommand(env), clusterCommand(env), demoCommand(env), explainCommand()])
    prog.addCommand(cmd.exitOverride().showHelpAfterError('(run with --help for usage)'));
  return prog;
}

export async function main(argv: string[], env: Env): Promise<number> {
  setHelperEnvironment(env);
  try {
    await program(env).parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (err instanceof ConfigError) {
      // Every bad setting on its own line (settings.ts gathers them all before the start).
      for (const line of err.message.split('\n')) process.stderr.write(`slurm-otel: ${redactSecrets(line)}\n`);
      return 2;
    }
    if (err instanceof AgentDefect) {
      process.stderr.write(`slurm-otel: ${err.message}\n`);
      return DEFECT_EXIT;
    }
    if (err instanceof CollectionIncomplete) {
      process.stderr.write(`slurm-otel: ${err.message}\n`);
      return 1;
    }
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      process.stderr.write(`slurm-otel: cannot listen: ${(err as Error).message}\n`);
      return 1;
    }
    process.stderr.write(`slurm-otel: ${redactSecrets((err as Error).stack ?? String(err))}\n`);
    return 1;
  }
}
