/** Parsers for option values: each throws InvalidArgumentError with a message a user can act on. */
import { InvalidArgumentError } from 'commander';
import { parseBindAddress, type BindAddress } from '../telemetry/http.js';

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DAY_MS = 86_400_000;

/** Prometheus durations: whole numbers, units largest first, each at most once (`1w2d`, `90m`, `1y`). */
const PROMETHEUS_DURATION = /^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$/;
const PROMETHEUS_UNIT_MS = [365 * DAY_MS, 7 * DAY_MS, DAY_MS, 3_600_000, 60_000, 1000, 1];

/**
 * Durations as Soperator's flags take them: Prometheus style (`1d`, `1w`, `2h30m`) first, then
 * Go style (`1.5h`, `2h45m30.5s`, `500ms`); the two agree wherever both accept a value.
 */
export function parseDuration(value: string): number {
  const v = value.trim();
  const prom = v === '' ? null : PROMETHEUS_DURATION.exec(v);
  if (prom) return PROMETHEUS_UNIT_MS.reduce((sum, unit, i) => sum + Number(prom[i + 1] ?? 0) * unit, 0);
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(v); m; m = re.exec(v)) {
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
    matched = re.lastIndex;
  }
  if (v === '0') return 0;
  if (v === '' || matched !== v.length)
    throw new InvalidArgumentError(`"${value}" is not a duration (examples: 15s, 1m30s, 500ms, 1h, 1d, 1w).`);
  return total;
}

/**
 * The longest delay a Node timer holds: its count of milliseconds is a signed 32-bit integer, and
 * a longer one is taken as 1 ms, so a `30d` interval would cycle a thousand times a second.
 */
export const MAX_DURATION_MS = 2 ** 31 - 1;
/** MAX_DURATION_MS written as a duration these parsers take back. */
export const MAX_DURATION_TEXT = '24d20h31m23s647ms';

/** A duration option's value: zero or more, and no longer than a timer can wait. */
export function duration(value: string): number {
  const ms = parseDuration(value);
  if (ms > MAX_DURATION_MS)
    throw new InvalidArgumentError(
      `"${value}" is longer than ${MAX_DURATION_TEXT} (${MAX_DURATION_MS} ms), the longest a timer can wait.`,
    );
  return ms;
}

/** A duration option's value that must be longer than zero. */
export function positiveDuration(value: string): number {
  const ms = duration(value);
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

/** One of `choices`, ignoring case and surrounding blanks (`" Accounting "` is `accounting`). */
export function oneOf<T extends string>(choices: readonly T[]): (value: string) => T {
  return (value) => {
    const v = value.trim().toLowerCase();
    const found = choices.find((c) => c.toLowerCase() === v);
    if (found !== undefined) return found;
    throw new InvalidArgumentError(`"${value}" is not one of ${choices.join(', ')}.`);
  };
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  B: 1,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  KIB: 2 ** 10,
  MIB: 2 ** 20,
  GIB: 2 ** 30,
};

/** Byte sizes: `512MiB`, `2GiB`, `1000000`. */
export function parseSize(value: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([a-zA-Z]*)$/.exec(value.trim());
  const unit = SIZE_UNITS[(m?.[2] ?? '').toUpperCase()];
  if (!m || unit === undefined || Number(m[1]) <= 0)
    throw new InvalidArgumentError(`"${value}" is not a size (examples: 512MiB, 2GiB).`);
  return Math.floor(Number(m[1]) * unit);
}

/** A switch that may also be set from the environment: `true`/`false` (also 1/0, yes/no, on/off). */
export function switchValue(value: string): boolean {
  const v = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off', ''].includes(v)) return false;
  throw new InvalidArgumentError(`"${value}" is not true or false`);
}
