/**
 * Every duration an option takes ends up in a timer (or beside one), and a Node timer holds at most
 * 2^31-1 ms: a longer delay fires after 1 ms, so a `30d` interval would cycle a thousand times a
 * second. Each duration option refuses such a value, naming itself and the maximum.
 */
import { CommanderError, type Command, type Option } from 'commander';
import { describe, expect, it } from 'vitest';
import { accountingLookbackMs } from '../../src/cli/cluster.js';
import { ConfigError } from '../../src/cli/common.js';
import { resolveOtlp } from '../../src/cli/otel.js';
import { program } from '../../src/cli/program.js';
import { MAX_DURATION_MS, MAX_DURATION_TEXT, parseDuration } from '../../src/cli/values.js';

function allCommands(cmd: Command): Command[] {
  return [cmd, ...cmd.commands.flatMap(allCommands)];
}

const silent = { writeErr: () => undefined, writeOut: () => undefined };
const durationOptions: Array<[string, Option]> = allCommands(program({})).flatMap((c) =>
  c.options.filter((o) => o.flags.includes('<duration>')).map((o): [string, Option] => [c.name(), o]),
);
// Parsed only when the accounting source uses it (a stale value must not stop a controller-mode agent).
const PARSED_LATER = new Set(['--accounting-jobs-lookback']);

/** The error of `slurm-otel <command> <flag> <value>`; undefined when it parsed. */
async function parseError(command: string, flag: string, value: string): Promise<string | undefined> {
  const prog = program({});
  for (const c of allCommands(prog)) c.configureOutput(silent);
  try {
    await prog.parseAsync([command, flag, value], { from: 'user' });
  } catch (err) {
    // A refused value is a commander error, or one line of the start-up check's ConfigError.
    if (err instanceof CommanderError || err instanceof ConfigError) return err.message;
    throw err;
  }
  return undefined;
}

describe('duration options', () => {
  it('the check sees every duration option of every command', () => {
    const names = new Set(durationOptions.map(([, o]) => o.long));
    for (const name of [
      '--collection-interval',
      '--fd-rescan-interval',
      '--squeue-timeout',
      '--otlp-interval',
      '--otlp-timeout',
      '--request-timeout',
      '--jwt-lifetime',
      '--accounting-jobs-lookback',
      '--tick',
    ])
      expect(names).toContain(name);
  });

  it('the maximum, written as a duration, is exactly what a timer holds', () => {
    expect(MAX_DURATION_MS).toBe(2 ** 31 - 1);
    expect(parseDuration(MAX_DURATION_TEXT)).toBe(MAX_DURATION_MS);
  });

  it.each(durationOptions.filter(([, o]) => !PARSED_LATER.has(o.long ?? '')))(
    '%s %s refuses a value a timer cannot hold, naming the option and the maximum',
    async (command, option) => {
      for (const value of ['25d', '2147483648ms', '1y'])
        expect(await parseError(command, option.long as string, value)).toMatch(
          `option '${option.flags}' argument '${value}' is invalid. "${value}" is longer than 24d20h31m23s647ms (2147483647 ms), the longest a timer can wait.`,
        );
      // The longest a timer holds is taken as it is.
      expect(option.parseArg?.(MAX_DURATION_TEXT, undefined)).toBe(MAX_DURATION_MS);
      expect(option.parseArg?.('2147483647ms', undefined)).toBe(MAX_DURATION_MS);
    },
  );

  it('the accounting lookback refuses it too, when the accounting source reads it', () => {
    expect(() => accountingLookbackMs({ jobSource: 'accounting', accountingJobsLookback: '4w' })).toThrow(
      '--accounting-jobs-lookback: "4w" is longer than 24d20h31m23s647ms (2147483647 ms), the longest a timer can wait.',
    );
    expect(accountingLookbackMs({ jobSource: 'accounting', accountingJobsLookback: '3w' })).toBe(21 * 86_400_000);
  });

  it.each(['OTEL_METRIC_EXPORT_INTERVAL', 'OTEL_EXPORTER_OTLP_METRICS_TIMEOUT', 'OTEL_EXPORTER_OTLP_TIMEOUT'])(
    '%s in milliseconds is held to the same maximum',
    (name) => {
      const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
      expect(() => resolveOtlp({}, { ...endpoint, [name]: '2147483648' })).toThrow(
        `${name}="2147483648" is longer than 2147483647 ms (24d20h31m23s647ms), the longest a timer can wait`,
      );
      expect(resolveOtlp({}, { ...endpoint, [name]: '2147483647' })).toBeDefined();
    },
  );
});
