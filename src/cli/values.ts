/** Parsers for option values: each throws InvalidArgumentError with a message a user can act on. */
import { InvalidArgumentError } from 'commander';
import { parseBindAddress, type BindAddress } from '../telemetry/http.js';

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go-style durations, as Soperator's flags take them: `15s`, `1m30s`, `500ms`, `1h`. */
export function parseDuration(value: string): number {
  const v = value.trim();
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(v); m; m = re.exec(v)) {
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
    matched = re.lastIndex;
  }
  if (v === '' || matched !== v.length) throw new InvalidArgumentError(`"${value}" is not a duration (examples: 15s, 1m30s, 500ms, 1h).`);
  return total;
}

export function positiveDuration(value: string): number {
  const ms = parseDuration(value);
  if (ms <= 0) throw new InvalidArgumentError(`"${value}" must be longer than zero.`);
  return ms;
}

export function bindAddress(value: string): BindAddress {
  try {
    return parseBindAddress(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`"${value}" is not a positive integer.`);
  return n;
}

export function oneOf<T extends string>(choices: readonly T[]): (value: string) => T {
  return (value) => {
    if ((choices as readonly string[]).includes(value)) return value as T;
    throw new InvalidArgumentError(`"${value}" is not one of ${choices.join(', ')}.`);
  };
}

const SIZE_UNITS: Record<string, number> = { '': 1, B: 1, KB: 1e3, MB: 1e6, GB: 1e9, KIB: 2 ** 10, MIB: 2 ** 20, GIB: 2 ** 30 };

/** Byte sizes: `512MiB`, `2GiB`, `1000000`. */
export function parseSize(value: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([a-zA-Z]*)$/.exec(value.trim());
  const unit = SIZE_UNITS[(m?.[2] ?? '').toUpperCase()];
  if (!m || unit === undefined || Number(m[1]) <= 0) throw new InvalidArgumentError(`"${value}" is not a size (examples: 512MiB, 2GiB).`);
  return Math.floor(Number(m[1]) * unit);
}
