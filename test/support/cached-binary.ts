/**
 * A program the prep scripts leave in the cache outside the clone (the Collector, VictoriaMetrics):
 * whether its tests run, and its path. Under CI they always run, and fail when it is missing;
 * elsewhere they are skipped with a message naming the script that makes it.
 */
import fs from 'node:fs';

function present(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Whether the tests of `what` run (`make`: the command that puts `bin` in place). */
export function shouldRunWith(bin: string, what: string, make: string): boolean {
  if (present(bin)) return true;
  if (process.env.CI) return true;
  process.stderr.write(`\n!!! SKIPPING the ${what} tests: no ${bin}; make it with ${make} !!!\n\n`);
  return false;
}

/** `bin`; throws (naming `make`) when it is missing. */
export function requireBinary(bin: string, make: string): string {
  if (!present(bin)) throw new Error(`${bin} is missing (CI is set, so this fails instead of skipping): run ${make}`);
  return bin;
}
