/**
 * `--devices-include` / `--devices-exclude`: shell-style patterns over device names (`mlx5_*`,
 * `mlx5_[0-3]`, `nvidia7`, a GPU's `GPU-…` UUID), turned into the node agent's DeviceFilter. An
 * HCA is named as sysfs names it (class/infiniband); a GPU as `nvidia<minor>` (its /dev node) or
 * by its UUID. Exclusion wins over inclusion; with no include pattern every device is included.
 */
import type { Option } from 'commander';
import type { DeviceFilter } from '../node/join/excluded.js';
import { ConfigError } from './common.js';
import { envOption } from './export-options.js';

export interface DevicePatternFlags {
  devicesInclude?: string;
  devicesExclude?: string;
}

const opt = envOption('IB_SLURM_EXPORTER_');

/** The two options, for node and explain alike. */
export function devicePatternOptions(): Option[] {
  return [
    opt(
      '--devices-include <patterns>',
      'comma-separated patterns (mlx5_*, mlx5_[0-3], nvidia0, a GPU UUID): only the HCAs and GPUs they match are read and attributed (default all); a pattern matching no device at start is warned of, and a device that appears later (hot-plug) and matches is read from the cycle that finds it',
      'DEVICES_INCLUDE',
    ),
    opt(
      '--devices-exclude <patterns>',
      'comma-separated patterns of HCAs and GPUs left out: no series, and what a job holds there is not counted (wins over --devices-include)',
      'DEVICES_EXCLUDE',
    ),
  ];
}

/** One pattern, as written and compiled. */
interface Pattern {
  readonly text: string;
  readonly re: RegExp;
}

// What a device name is made of (mlx5_0, rocep1s0f0, GPU-1a2b…), and the pattern characters.
const PATTERN_CHARS = /^[A-Za-z0-9_.:*?[\]!-]+$/;

/** A pattern as a whole-name regular expression, or why it is not one. */
export function compilePattern(text: string): RegExp | string {
  if (text === '') return 'an empty pattern (two commas, or one at an end)';
  if (text.includes('/')) return 'patterns name devices (mlx5_0, nvidia0), not paths';
  if (/\.[*+]/.test(text) || /[\\^$()|+{}]/.test(text))
    return 'looks like a regular expression: patterns are shell-style (mlx5_*, mlx5_[0-3])';
  if (!PATTERN_CHARS.test(text)) return 'has a character no device name has (names: letters, digits, _ . : -)';
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string;
    if (ch === '*') out += '.*';
    else if (ch === '?') out += '.';
    else if (ch === ']') return 'has a ] with no [ before it';
    else if (ch === '[') {
      const end = text.indexOf(']', i + 1);
      if (end < 0) return 'has a [ with no ] after it';
      const body = text.slice(i + 1, end);
      const negated = body.startsWith('!');
      const set = negated ? body.slice(1) : body;
      if (set === '') return 'has an empty [] set';
      out += `[${negated ? '^' : ''}${set.replace(/[\\\]^]/g, '\\$&')}]`;
      i = end;
    } else out += ch.replace(/[.\-:]/g, '\\$&');
  }
  try {
    return new RegExp(`^${out}$`);
  } catch {
    return 'has a range that runs backwards (e.g. [3-0])';
  }
}

/** The patterns of one option, and one message per bad one. */
function patternsOf(flag: string, list: string | undefined): { patterns: Pattern[]; errors: string[] } {
  const patterns: Pattern[] = [];
  const errors: string[] = [];
  if (list === undefined) return { patterns, errors };
  for (const text of list.split(',').map((p) => p.trim())) {
    const re = compilePattern(text);
    if (typeof re === 'string') errors.push(`${flag} "${text}": ${re}`);
    else patterns.push({ text, re });
  }
  return { patterns, errors };
}

/** Every bad pattern of both options, one message each (none when all are good). */
export function devicePatternErrors(f: DevicePatternFlags): string[] {
  return [
    ...patternsOf('--devices-include', f.devicesInclude).errors,
    ...patternsOf('--devices-exclude', f.devicesExclude).errors,
  ];
}

/**
 * The filter the node agent gets; undefined when no pattern is given. Bad patterns stop the start
 * (exit 2), every one named.
 */
export function deviceFilter(f: DevicePatternFlags): DeviceFilter | undefined {
  const errors = devicePatternErrors(f);
  if (errors.length > 0) throw new ConfigError(errors.join('\n'));
  const include = patternsOf('', f.devicesInclude).patterns;
  const exclude = patternsOf('', f.devicesExclude).patterns;
  if (include.length === 0 && exclude.length === 0) return undefined;
  return filterOf(include, exclude);
}

function filterOf(include: readonly Pattern[], exclude: readonly Pattern[]): DeviceFilter {
  const matching = (patterns: readonly Pattern[], names: readonly string[]): Pattern | undefined =>
    patterns.find((p) => names.some((n) => p.re.test(n)));
  return (names) => {
    const out = matching(exclude, names);
    if (out !== undefined) return `excluded by --devices-exclude ${out.text}`;
    if (include.length > 0 && matching(include, names) === undefined)
      return `excluded by --devices-include ${include.map((p) => p.text).join(',')} (matches none of its patterns)`;
    return undefined;
  };
}

/**
 * One warning per pattern that matches none of `devices` (each by its names), naming the devices
 * it could have matched. A warning, not an error: a device can appear later (hot-plug, a driver
 * loaded after the agent), and is read from the first cycle that finds it.
 */
export function unmatchedPatternWarnings(f: DevicePatternFlags, devices: readonly (readonly string[])[]): string[] {
  const onNode = devices.length === 0 ? 'none' : devices.map((d) => d[0]).join(', ');
  const unmatched = (list: string | undefined): Pattern[] =>
    patternsOf('', list).patterns.filter((p) => !devices.some((names) => names.some((n) => p.re.test(n))));
  return [
    ...unmatched(f.devicesInclude).map(
      (p) => `--devices-include ${p.text} matches no device on this node (devices: ${onNode}): it includes nothing`,
    ),
    ...unmatched(f.devicesExclude).map(
      (p) => `--devices-exclude ${p.text} matches no device on this node (devices: ${onNode}): it leaves nothing out`,
    ),
  ];
}
