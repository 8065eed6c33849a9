/**
 * The options both agents share (delivery, endpoints' TLS, logging) mean the same in each, so a
 * site that runs both reads them one way: where their defaults are meant to agree, they do.
 */
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { program } from '../../src/cli/program.js';

function defaultOf(cmd: Command, flag: string): unknown {
  const o = cmd.options.find((x) => x.long === flag);
  if (o === undefined) throw new Error(`${cmd.name()} has no ${flag}`);
  return o.defaultValue;
}

describe('options shared by the agents', () => {
  const commands = program({}).commands.filter((c) => ['node', 'cluster', 'demo'].includes(c.name()));

  it('exist on every agent command', () => {
    expect(commands.map((c) => c.name()).sort()).toEqual(['cluster', 'demo', 'node']);
  });

  it.each(['--log-level', '--otlp-protocol', '--web-config-file'])('%s has one default', (flag) => {
    const defaults = commands.map((c) => defaultOf(c, flag));
    expect(new Set(defaults).size, `${flag}: ${JSON.stringify(defaults)}`).toBe(1);
  });

  it('logs at info unless told otherwise', () => {
    for (const c of commands) expect(defaultOf(c, '--log-level'), c.name()).toBe('info');
  });
});
