/**
 * `slurm-otel demo` takes only the options it honours: the node options that point the agent at a
 * host (its filesystems, its rdma tool) are refused with a message saying the demo makes its own
 * tree, before anything starts, and --help says what the demo runs.
 */
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { program } from '../../src/cli/program.js';
import { DEMO_REFUSED } from '../../src/cli/demo-flags.js';

// The built command, exactly as users run it (npm test builds first).
const BIN = path.resolve('dist/src/cli/main.js');
const REFUSED = Object.values(DEMO_REFUSED);

function cli(args: string[]) {
  // A refused option stops the demo before it listens; were it taken, the demo would run until the timeout.
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '' },
    timeout: 20_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function optionsOf(name: string): string[] {
  const cmd = program({}).commands.find((c) => c.name() === name);
  if (cmd === undefined) throw new Error(`no ${name} command`);
  return cmd.options.map((o) => o.long ?? o.flags);
}

describe('slurm-otel demo (command line)', () => {
  it('refuses exactly the node options that name the host: node takes them, demo does not', () => {
    expect([...REFUSED].sort()).toEqual([
      '--cgroup-root',
      '--devices-exclude',
      '--devices-include',
      '--gpu-allocation',
      '--nvidia-proc-root',
      '--procfs-root',
      '--qp-counters',
      '--rdma-path',
      '--scontrol-path',
      '--slurmd-path',
      '--sysfs-root',
    ]);
    expect(optionsOf('node')).toEqual(expect.arrayContaining(REFUSED));
    expect(optionsOf('demo').filter((o) => REFUSED.includes(o))).toEqual([]);
    // Everything else the node command takes, the demo takes too.
    const nodeRest = optionsOf('node').filter((o) => !REFUSED.includes(o) && o !== '--once');
    expect(optionsOf('demo')).toEqual(expect.arrayContaining(nodeRest));
  });

  it.each(
    REFUSED.flatMap((flag) => [
      [flag, `${flag} /x`],
      [flag, `${flag}=x`],
    ]),
  )('%s is refused with why (%s)', (flag, written) => {
    const r = cli(['demo', ...written.split(' '), '--no-cluster', '--log-level', 'error']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`the demo does not take ${flag}: it makes its own node tree and its own rdma tool`);
  });

  it('any other unknown option gets the usual message', () => {
    const r = cli(['demo', '--sysfs-rot', '/x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown option '--sysfs-rot'/);
    expect(r.stderr).not.toContain('does not take');
  });

  it('reports every unknown, refused and bad option at once, each once (exit 2)', () => {
    const r = cli(['demo', '--bogus', '--sysfs-root', '/x', '--tick', '0s', '--qp-counters=observe', '--no-cluster']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    expect(lines).toEqual([
      "slurm-otel: unknown option '--bogus'",
      expect.stringContaining('the demo does not take --sysfs-root:'),
      expect.stringContaining('the demo does not take --qp-counters:'),
      expect.stringContaining("option '--tick <duration>' argument '0s' is invalid."),
    ]);
  });

  it('--help says what the demo runs and which node options it does not take', () => {
    const r = cli(['demo', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/writes its own synthetic node/);
    expect(r.stdout).toMatch(/stand-in\s+rdma tool/);
    expect(r.stdout).toMatch(/every optional sub-collector on reads a fake slurmrestd/);
    const options = r.stdout.split(/\n\s*\n/).find((block) => block.startsWith('Options:')) ?? '';
    for (const flag of REFUSED) expect(options, flag).not.toContain(flag);
    expect(r.stdout).toContain(`It does not take ${REFUSED.join(', ')}`);
  });
});
