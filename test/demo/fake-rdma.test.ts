/** The demo's stand-in rdma tool on its own: reads from its files with /bin/sh alone; set refused. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FakeRdma } from '../../src/demo/fake-rdma.js';
import { tmpDir } from '../support/tmp.js';

// No Node on PATH: the single executable's host has none.
const run = (rdma: FakeRdma, args: string[]) =>
  spawnSync(rdma.viaShell.path, [...rdma.viaShell.leadingArgs, ...args], {
    encoding: 'utf8',
    env: { PATH: '/usr/bin:/bin' },
  });

describe("the demo's stand-in rdma", () => {
  it('answers the reads from its files, [] where a file is absent, and records nothing unasked', () => {
    const rdma = new FakeRdma(tmpDir('fake-rdma-'));
    rdma.modes([{ ifname: 'mlx5_1', port: 1, mode: 'qp auto type,pid on' }]);
    const mode = run(rdma, ['-j', 'statistic', 'qp', 'mode']);
    expect(mode.status).toBe(0);
    expect(JSON.parse(mode.stdout)).toEqual([{ ifindex: 1, ifname: 'mlx5_1', port: 1, mode: 'qp auto type,pid on' }]);
    expect(run(rdma, ['-j', 'statistic', 'qp', 'show']).stdout).toBe('[]');
    expect(run(rdma, ['-j', 'resource', 'show', 'qp']).stdout).toBe('[]');
    // A demo runs for days: its calls are logged only where a test asked (RecordingRdma).
    expect(fs.existsSync(path.join(rdma.dir, 'calls.log'))).toBe(false);
  });

  it('refuses set as the tool does without CAP_NET_ADMIN, and unknown commands', () => {
    const rdma = new FakeRdma(tmpDir('fake-rdma-'));
    const set = run(rdma, ['statistic', 'qp', 'set', 'link', 'mlx5_1/1', 'auto', 'type,pid', 'on']);
    expect(set.status).toBe(1);
    expect(set.stderr).toMatch(/Operation not permitted/);
    const other = run(rdma, ['link', 'show']);
    expect(other.status).toBe(1);
    expect(other.stderr).toBe('rdma: unknown command link show\n');
  });
});
