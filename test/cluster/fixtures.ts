/** Fixture loading shared by the cluster tests. */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'slurm');
export const RECORDED_2205 = join(FIXTURES, 'recorded', 'slurm-22.05', 'dbd');
export const BUILT_VERSIONS = ['v0.0.40', 'v0.0.41', 'v0.0.42', 'v0.0.43', 'v0.0.44', 'v0.0.45'] as const;

export function readJson(...parts: string[]): unknown {
  return JSON.parse(readFileSync(join(FIXTURES, ...parts), 'utf8')) as unknown;
}

export function readText(...parts: string[]): string {
  return readFileSync(join(FIXTURES, ...parts), 'utf8');
}

export function listFiles(...parts: string[]): string[] {
  return readdirSync(join(FIXTURES, ...parts)).sort();
}

export function recorded(version: string, file: string): unknown {
  return readJson('recorded', 'slurm-22.05', 'dbd', version, file);
}

export function built(version: string, file: string): unknown {
  return readJson('built', version, file);
}
