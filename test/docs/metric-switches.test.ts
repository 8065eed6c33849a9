/**
 * The `default` column of docs/metrics.md comes from each family's switch in the catalogue: the
 * switch must name an option the agent really has, a value that option accepts, and agree with
 * the option's default about whether the family is on when nothing is set.
 */
import type { Command, Option } from 'commander';
import { describe, expect, it } from 'vitest';
import { DOC_TABLES } from '../../scripts/docs-tables.js';
import { documentedCommands } from '../../src/cli/program.js';
import { prometheusName, type MetricSpec, type Switch } from '../../src/telemetry/spec.js';

const commands = documentedCommands({});
const SELF_TABLES = ['node-self-metrics', 'cluster-self-metrics', 'process-metrics', 'http-guard-metrics'];

/** The command whose options switch the families of a data table. */
function commandOf(table: string): Command {
  const cmd = commands[table === 'node-metrics' ? 'node-options' : 'cluster-options'];
  if (cmd === undefined) throw new Error(`no command for ${table}`);
  return cmd;
}

/** What the option makes of the switch's setting, and whether its default is that setting. */
function parsed(opt: Option, sw: Switch): { value: unknown; onByDefault: boolean } {
  const raw = sw.value ?? opt.presetArg;
  if (typeof raw !== 'string') throw new Error(`${sw.option} takes no value and has no preset`);
  const value = opt.parseArg ? opt.parseArg(raw, undefined) : raw;
  const def: unknown = opt.defaultValue;
  if (sw.listed) {
    expect(Array.isArray(value) && Array.isArray(def), `${sw.option} is a list`).toBe(true);
    return { value, onByDefault: (def as unknown[]).includes(sw.value) };
  }
  return { value, onByDefault: def === value };
}

const switched = Object.entries(DOC_TABLES).flatMap(([table, specs]) =>
  specs.filter((s) => s.switchedBy !== undefined).map((s): [string, MetricSpec, Switch] => [table, s, s.switchedBy!]),
);

describe('the switches of the catalogue', () => {
  it('are declared on data families only (self-monitoring is always on)', () => {
    expect(switched.length).toBeGreaterThan(0);
    for (const [table, spec] of switched) expect(SELF_TABLES, prometheusName(spec)).not.toContain(table);
  });

  it('name an option of the agent, a value it accepts, and the default it has', () => {
    for (const [table, spec, sw] of switched) {
      const name = prometheusName(spec);
      const opt = commandOf(table).options.find((o) => o.long === sw.option);
      expect(opt, `${name}: ${sw.option}`).toBeDefined();
      const { value, onByDefault } = parsed(opt!, sw);
      if (sw.listed) expect(value, name).toEqual([sw.value]);
      expect(onByDefault, `${name}: ${sw.option} ${sw.value ?? ''} on by default`).toBe(sw.byDefault ?? false);
    }
  });

  it('leave off by default what needs an operator to turn it on', () => {
    const offByDefault = switched.filter(([, , sw]) => !sw.byDefault).map(([, s]) => prometheusName(s));
    const expected = [
      /^ib_slurm_job_qp(s|_counted|_counters_total|_transmit_bytes_total|_receive_bytes_total)$/,
      /^ib_slurm_job_gpu_allocated$/,
      /^slurm_license_/,
      /^slurm_reservation_/,
      /^slurm_fairshare_/,
      /^slurm_(qos|association)_(tres_)?limit$/,
      /^slurm_node_nvlink_instance_group$/,
    ];
    for (const re of expected)
      expect(
        offByDefault.filter((n) => re.test(n)),
        String(re),
      ).not.toEqual([]);
    for (const n of offByDefault)
      expect(
        expected.some((re) => re.test(n)),
        n,
      ).toBe(true);
  });
});
