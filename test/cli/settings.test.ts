import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';

/** The lines the command printed on stderr, without its name. */
const lines = (stderr: string): string[] =>
  stderr
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.replace(/^slurm-otel: /, ''));

describe('every bad setting at once, exit 2', () => {
  it('node: a bad duration, a missing root and a bad pattern, each on its own line', () => {
    const r = cli([
      'node',
      '--collection-interval',
      '5x',
      '--sysfs-root',
      '/nonexistent-sys',
      '--devices-exclude',
      'mlx5_[0',
    ]);
    expect(lines(r.stderr)).toEqual([
      `option '--collection-interval <duration>' argument '5x' is invalid. "5x" is not a duration (examples: 15s, 1m30s, 500ms, 1h, 1d, 1w).`,
      '--sysfs-root /nonexistent-sys does not exist: no HCA could be found',
      '--devices-exclude "mlx5_[0": has a [ with no ] after it',
    ]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
  });

  it('node: a value from the environment, a root on the wrong kernel filesystem, an unknown family', () => {
    const r = cli(['node', '--procfs-root', '/sys', '--disable-metrics', 'ib_slurm_nonesuch'], {
      IB_SLURM_EXPORTER_SQUEUE_TIMEOUT: '0s',
    });
    expect(lines(r.stderr)).toEqual([
      `option '--squeue-timeout <duration>' value '0s' from env 'IB_SLURM_EXPORTER_SQUEUE_TIMEOUT' is invalid. "0s" must be longer than zero.`,
      "--procfs-root /sys is on sysfs, not the filesystem it names: no process's fds could be read",
      expect.stringMatching(/^--disable-metrics: .*ib_slurm_nonesuch/),
    ]);
    expect(r.code).toBe(2);
  });

  it('cluster: no cluster name, a bad size, an unreadable CA file and kubeconfig, a token source without its file', () => {
    const r = cli([
      'cluster',
      '--max-response-size',
      'big',
      '--slurm-api-ca-file',
      '/nonexistent.pem',
      '--kubeconfig-path',
      '/nonexistent-kubeconfig',
      '--token-source',
      'file',
      '--once',
    ]);
    expect(lines(r.stderr)).toEqual([
      `option '--max-response-size <size>' argument 'big' is invalid. "big" is not a size (examples: 512MiB, 2GiB).`,
      "required option '--cluster-name <name>' not specified",
      '--slurm-api-ca-file /nonexistent.pem: ENOENT',
      '--kubeconfig-path /nonexistent-kubeconfig: ENOENT',
      'token source file needs --token-file',
    ]);
    expect(r.code).toBe(2);
  });
});

describe("commander's own usage errors join the block", () => {
  it('node: an unknown option no longer hides the bad settings after it', () => {
    const r = cli(['node', '--bogus', '--collection-interval', '0s', '--procfs-root', '/nonexistent']);
    expect(lines(r.stderr)).toEqual([
      "unknown option '--bogus'",
      `option '--collection-interval <duration>' argument '0s' is invalid. "0s" must be longer than zero.`,
      "--procfs-root /nonexistent does not exist: no process's fds could be read",
    ]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
  });

  it("node: every unknown option, commander's suggestion kept, and a value missing at the end", () => {
    const r = cli(['node', '--onec', '--bogus', 'x', '--sysfs-root', '/nonexistent-sys', '--procfs-root']);
    expect(lines(r.stderr)).toEqual([
      "unknown option '--onec' (Did you mean --once?)",
      // The word after an unknown option is its value, not a stray operand of its own.
      "unknown option '--bogus'",
      "option '--procfs-root <dir>' argument missing",
      '--sysfs-root /nonexistent-sys does not exist: no HCA could be found',
    ]);
    expect(r.code).toBe(2);
  });

  it('cluster: an unknown option with the bad values and missing settings', () => {
    const r = cli(['cluster', '--slurm-api-sever', 'http://127.0.0.1:1', '--max-response-size', 'big', '--once']);
    expect(lines(r.stderr)).toEqual([
      "unknown option '--slurm-api-sever' (Did you mean --slurm-api-server?)",
      `option '--max-response-size <size>' argument 'big' is invalid. "big" is not a size (examples: 512MiB, 2GiB).`,
      "required option '--cluster-name <name>' not specified",
    ]);
    expect(r.code).toBe(2);
  });

  it('help asked for beside an unknown option is still help', () => {
    const r = cli(['node', '--bogus', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: slurm-otel node/);
  });
});

describe("explain: the node agent's start-up checks", () => {
  it('bad roots, a bad pattern, an unreadable device table and a refused value: one block, no table', () => {
    const r = cli([
      'explain',
      '--sysfs-root',
      '/nonexistent-sys',
      '--procfs-root',
      '/sys',
      '--devices-include',
      'mlx5_[0',
      '--device-table',
      '/nonexistent-table',
      '--job',
      'x',
      '--bogus',
    ]);
    expect(lines(r.stderr)).toEqual([
      "unknown option '--bogus'",
      `option '--job <id>' argument 'x' is invalid. "x" is neither a job id (digits) nor a SLUID.`,
      '--sysfs-root /nonexistent-sys does not exist: no HCA could be found',
      "--procfs-root /sys is on sysfs, not the filesystem it names: no process's fds could be read",
      '--devices-include "mlx5_[0": has a [ with no ] after it',
      '--device-table /nonexistent-table cannot be read (ENOENT)',
    ]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
  });
});
