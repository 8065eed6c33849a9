/**
 * Soperator's exporter flag cases (job list parameters, durations), their inputs and expected
 * results carried over as data.
 */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { accountingLookbackMs, addClusterOptions, type ClusterFlags } from '../../src/cli/cluster.js';
import { parseDuration } from '../../src/cli/values.js';

const H = 3_600_000;

function flags(args: string[]): ClusterFlags {
  const cmd = addClusterOptions(new Command('cluster'))
    .exitOverride()
    .configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  cmd.parse(['--cluster-name', 'c', ...args], { from: 'user' });
  return cmd.opts<ClusterFlags>();
}

function jobListParams(args: string[]): { source: string; lookbackMs: number | undefined } {
  const f = flags(args);
  return { source: f.jobSource, lookbackMs: accountingLookbackMs(f) };
}

describe('job list parameters', () => {
  it.each<[string, string[], { source: string; lookbackMs: number | undefined }]>([
    [
      'controller default',
      ['--job-source', 'controller', '--accounting-jobs-lookback', '1h'],
      { source: 'controller', lookbackMs: undefined },
    ],
    [
      'empty source defaults to controller',
      ['--job-source', '', '--accounting-jobs-lookback', '1h'],
      { source: 'controller', lookbackMs: undefined },
    ],
    [
      'controller mode tolerates malformed lookback',
      ['--job-source', 'controller', '--accounting-jobs-lookback', 'garbage-from-stale-env'],
      { source: 'controller', lookbackMs: undefined },
    ],
    [
      'controller mode tolerates empty lookback',
      ['--job-source', 'controller', '--accounting-jobs-lookback', ''],
      { source: 'controller', lookbackMs: undefined },
    ],
    [
      'accounting source is trimmed and case-normalized',
      ['--job-source', ' Accounting ', '--accounting-jobs-lookback', '30m'],
      { source: 'accounting', lookbackMs: 0.5 * H },
    ],
    [
      'Prometheus-style 1d lookback',
      ['--job-source', 'accounting', '--accounting-jobs-lookback', '1d'],
      { source: 'accounting', lookbackMs: 24 * H },
    ],
    [
      'Prometheus-style 1w lookback',
      ['--job-source', 'accounting', '--accounting-jobs-lookback', '1w'],
      { source: 'accounting', lookbackMs: 7 * 24 * H },
    ],
    [
      'Go-style fractional lookback',
      ['--job-source', 'accounting', '--accounting-jobs-lookback', '1.5h'],
      { source: 'accounting', lookbackMs: 1.5 * H },
    ],
    [
      'Go-style mixed-units lookback',
      ['--job-source', 'accounting', '--accounting-jobs-lookback', '2h45m30.5s'],
      { source: 'accounting', lookbackMs: 2 * H + 45 * 60_000 + 30_500 },
    ],
  ])('%s', (_name, args, want) => {
    expect(jobListParams(args)).toEqual(want);
  });

  it.each<[string, string[], RegExp]>([
    [
      'accounting requires non-empty lookback',
      ['--job-source', 'accounting', '--accounting-jobs-lookback', ''],
      /--accounting-jobs-lookback: "" is not a duration/,
    ],
    [
      'unsupported source',
      ['--job-source', 'invalid', '--accounting-jobs-lookback', '1h'],
      /"invalid" is not one of controller, accounting/,
    ],
    [
      'accounting requires positive lookback',
      ['--job-source', 'accounting', '--accounting-jobs-lookback', '0s'],
      /--accounting-jobs-lookback: "0s" must be longer than zero/,
    ],
    [
      'invalid lookback duration',
      ['--job-source', 'accounting', '--accounting-jobs-lookback', 'not-a-duration'],
      /"not-a-duration" is not a duration/,
    ],
  ])('%s → an error naming it', (_name, args, message) => {
    expect(() => jobListParams(args)).toThrow(message);
  });

  it('takes Prometheus-style durations for the collection interval too', () => {
    expect(flags(['--collection-interval', '1d']).collectionInterval).toBe(24 * H);
  });
});

describe('durations', () => {
  it.each<[string, string, number]>([
    ['prom days', '1d', 24 * H],
    ['prom weeks', '2w', 14 * 24 * H],
    ['prom hours', '1h', H],
    ['go fractional second', '0.5s', 500],
    ['go fractional hour', '1.5h', 1.5 * H],
    ['go mixed units with fraction', '2h45m30.5s', 2 * H + 45 * 60_000 + 30_500],
    ['overlap integer minute', '30m', 30 * 60_000],
    ['prom combined, largest unit first', '1w2d3h', (9 * 24 + 3) * H],
    ['prom years', '1y', 365 * 24 * H],
  ])('%s: %s', (_name, input, ms) => {
    expect(parseDuration(input)).toBe(ms);
  });

  it.each(['garbage', '1.5d', '1h1d', '', '-1s'])('neither parser accepts %j', (input) => {
    expect(() => parseDuration(input)).toThrow(/is not a duration/);
  });
});
