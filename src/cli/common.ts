/** Bits every subcommand shares. */
import { createRequire } from 'node:module';
import { killEveryRun } from '../child-runner.js';
import type { Logger } from '../log.js';

/** Set by the single executable's build (scripts/sea/build.ts): it has no package.json beside it. */
declare const SLURM_OTEL_BUNDLED_VERSION: string | undefined;

function findVersion(): string {
  if (typeof SLURM_OTEL_BUNDLED_VERSION === 'string') return SLURM_OTEL_BUNDLED_VERSION;
  const require = createRequire(import.meta.url);
  for (const rel of ['../../package.json', '../../../package.json']) {
    try {
      return (require(rel) as { version: string }).version;
    } catch {
      // try the next layout (source tree or dist/)
    }
  }
  return '0.0.0';
}

export const VERSION = findVersion();

/** A configuration the agent cannot run with: exit code 2. */
export class ConfigError extends Error {}

/**
 * `--once` prints the exposition as /metrics serves it, plus a final newline where it has none (the
 * SDK's "# no registered metrics" line ends without one), so that what follows on the terminal
 * does not run on.
 */
export function printExposition(text: string): void {
  process.stdout.write(text === '' || text.endsWith('\n') ? text : `${text}\n`);
}

/** `--once` could not collect everything: exit code 1, after printing what it did collect. */
export class CollectionIncomplete extends Error {}

/**
 * A promise was rejected with no handler: a defect in the agent, not bad input (every read, request
 * and push has its own handler). The agent logs the reason, stops as it does on SIGTERM (links
 * `--qp-counters manage` turned on are set back) and exits 70, so the service manager restarts it
 * in a known state instead of leaving it running in an unknown one or dying without a stop.
 */
export class AgentDefect extends Error {}

/** Exit status after a stop for a defect: EX_SOFTWARE of sysexits.h. */
export const DEFECT_EXIT = 70;

/** Exit status after a second signal: the shell's 128 + signal number. */
const FORCED_EXIT: Readonly<Record<string, number>> = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 };

/**
 * Starts an agent and runs it until SIGINT, SIGTERM or SIGHUP, then stops it (a bounded stop: see
 * telemetry/runtime) and exits 0. HUP is a stop too: its default action would end the process at
 * once, leaving the links `--qp-counters manage` turned on changed. The signal handlers come
 * first: a signal during the start (its first collection may be waiting on squeue or slurmrestd)
 * kills the helper commands in flight, so the start ends at once, and the agent is then stopped as
 * usual. A second signal kills the helper commands still running and exits at once, the agent
 * first naming what it leaves changed (exitingNow: links `--qp-counters manage` turned on). The process
 * exits even if a handle (a socket of a push that was cut short) is still open. An unhandled
 * promise rejection is a stop too, after which this throws AgentDefect.
 */
export async function runUntilSignal<A extends { stop(): Promise<void>; exitingNow?(): void }>(
  start: () => Promise<A>,
  logger: Logger,
  onStarted?: (agent: A) => void,
): Promise<void> {
  // One listener for the whole run: no moment without one, when a signal would kill the process.
  let starting = true;
  // The agent once started: a second signal asks it what an exit now leaves changed.
  const run: { agent?: A } = {};
  const first = new Promise<NodeJS.Signals | 'unhandledRejection'>((resolve) => {
    let seen = 0;
    const on = (sig: NodeJS.Signals | 'unhandledRejection'): void => {
      if (++seen === 1) {
        if (starting) killEveryRun();
        return resolve(sig);
      }
      if (sig === 'unhandledRejection') return;
      logger.warn({ signal: sig }, 'second signal: exiting at once, without finishing the stop');
      // What the stop would have set back (links turned on) is named, with how to do it by hand.
      run.agent?.exitingNow?.();
      killEveryRun();
      process.exit(FORCED_EXIT[sig] ?? 1);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
    process.on('SIGHUP', on);
    process.on('unhandledRejection', (reason) => {
      logger.error({ err: reason }, 'a promise was rejected with no handler (a defect): stopping');
      on('unhandledRejection');
    });
  });
  const agent = await start();
  run.agent = agent;
  starting = false;
  onStarted?.(agent);
  const cause = await first;
  logger.info(cause === 'unhandledRejection' ? { cause } : { signal: cause }, 'stopping');
  await agent.stop();
  logger.info('stopped');
  setTimeout(() => process.exit(), 100).unref();
  if (cause === 'unhandledRejection')
    throw new AgentDefect('stopped after an unhandled promise rejection (see the log)');
}
