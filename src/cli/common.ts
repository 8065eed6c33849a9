/** Bits every subcommand shares. */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

function findVersion(): string {
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

/** `--once` could not collect everything: exit code 1, after printing what it did collect. */
export class CollectionIncomplete extends Error {}

/** Resolves on the first SIGINT or SIGTERM. */
export function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (sig: NodeJS.Signals) => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(sig);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}
