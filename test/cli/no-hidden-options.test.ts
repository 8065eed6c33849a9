/**
 * The command has no option its --help hides: a hidden option is one only tests know of (test-only
 * code in the package), or one a user cannot learn about.
 */
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { program } from '../../src/cli/program.js';

function allCommands(cmd: Command): Command[] {
  return [cmd, ...cmd.commands.flatMap(allCommands)];
}

describe('options of slurm-otel', () => {
  const commands = allCommands(program({}));

  it('the check sees every command', () => {
    expect(commands.map((c) => c.name())).toEqual(expect.arrayContaining(['node', 'cluster', 'demo', 'explain']));
  });

  it('none is hidden from --help', () => {
    const hidden = commands.flatMap((c) => c.options.filter((o) => o.hidden).map((o) => `${c.name()} ${o.long}`));
    expect(hidden).toEqual([]);
  });
});
