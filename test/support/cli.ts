/** The built command run as users run it (npm test builds first), synchronously. */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

export const BIN = path.resolve('dist/src/cli/main.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `slurm-otel args` with only PATH and `env` in its environment; 20 s at most. */
export function cli(args: string[], env: Record<string, string> = {}): CliRun {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ...env },
    timeout: 20_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
