import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { BIN, canMakeDeviceNodes, explainCli, treeFlags } from '../support/node-tree.js';
import { tmpDir } from '../support/tmp.js';

const tree = () => writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false, gpus: true }));

function nodeOnce(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [BIN, 'node', '--once', '--log-level', 'error', ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ...env },
    timeout: 20_000,
  });
}

describe('--devices-include / --devices-exclude on the command line', () => {
  it.runIf(canMakeDeviceNodes('node --once with device patterns'))(
    'node --once: the excluded HCA and GPU are in no series; the rest as without the option',
    () => {
      const flags = treeFlags(tree());
      const all = nodeOnce(flags);
      expect(all.status, all.stderr).toBe(0);
      expect(all.stdout).toMatch(/device="mlx5_1"/);
      expect(all.stdout).toMatch(/device="nvidia2"/);
      const r = nodeOnce(flags, { IB_SLURM_EXPORTER_DEVICES_EXCLUDE: 'mlx5_1,nvidia2' });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).not.toMatch(/device="(mlx5_1|nvidia2)"/);
      expect(r.stdout).toMatch(/^ib_slurm_port_attribution\{device="mlx5_0",port="1",status="sole"\} 1$/m);
      // 918003 held only mlx5_1 and nvidia2.
      expect(r.stdout).not.toMatch(/job_id="918003",.*device=/);
    },
  );

  it.runIf(canMakeDeviceNodes('explain with device patterns'))(
    'explain lists an excluded device as excluded, naming the pattern, instead of hiding it',
    () => {
      const args = ['--devices-include', 'mlx5_[0-2],nvidia*', '--devices-exclude', 'nvidia2'];
      const table = explainCli(tree(), ...args);
      expect(table.status, table.stderr).toBe(0);
      expect(table.stdout).toMatch(/│ nvidia2 +│ GPU-\S+ +│ — +│ excluded +│ excluded by --devices-exclude nvidia2/);
      const r = explainCli(tree(), '--json', ...args);
      const out = JSON.parse(r.stdout) as {
        ports: { device: string; status: string; why: string }[];
        gpus: { device: string; status: string; why: string }[];
      };
      const of = (rows: { device: string; status: string; why: string }[], device: string) =>
        rows.filter((p) => p.device === device).map((p) => [p.status, p.why]);
      expect(of(out.ports, 'mlx5_3')).toEqual([
        ['excluded', 'excluded by --devices-include mlx5_[0-2],nvidia* (matches none of its patterns)'],
      ]);
      expect(of(out.gpus, 'nvidia2')).toEqual([['excluded', 'excluded by --devices-exclude nvidia2']]);
      expect(of(out.ports, 'mlx5_0')).toEqual([['sole', 'job 918001 is the only holder']]);
    },
  );

  it.runIf(canMakeDeviceNodes('node --once with a pattern that matches nothing'))(
    'a pattern that matches no device is warned of once at start, naming the devices there are',
    () => {
      const flags = treeFlags(tree());
      const args = [...flags, '--log-level', 'warn', '--log-format', 'plain'];
      const r = nodeOnce([...args, '--devices-include', 'mlx9_*,mlx5_0', '--devices-exclude', 'nvidia9']);
      expect(r.status, r.stderr).toBe(0);
      const warned = r.stderr.split('\n').filter((l) => l.includes('matches no device'));
      const devices = 'devices: mlx5_0, mlx5_1, mlx5_2, mlx5_3, nvidia0, nvidia1, nvidia2, nvidia3';
      expect(warned).toEqual([
        expect.stringContaining(
          `--devices-include mlx9_* matches no device on this node (${devices}): it includes nothing`,
        ),
        expect.stringContaining(
          `--devices-exclude nvidia9 matches no device on this node (${devices}): it leaves nothing out`,
        ),
      ]);
      // Its other pattern still does its work.
      expect(r.stdout).toMatch(/device="mlx5_0"/);
      expect(r.stdout).not.toMatch(/device="mlx5_1"/);
      // explain says the same on stderr, its table or JSON on stdout as usual.
      const explained = explainCli(tree(), '--json', '--devices-include', 'mlx9_*');
      expect(explained.status, explained.stderr).toBe(0);
      expect(explained.stderr).toBe(
        `slurm-otel: warning: --devices-include mlx9_* matches no device on this node (${devices}): it includes nothing\n`,
      );
      expect(() => JSON.parse(explained.stdout) as unknown).not.toThrow();
      // Patterns that all match something: no warning.
      const quiet = nodeOnce([...args, '--devices-include', 'mlx5_*,nvidia*']);
      expect(quiet.status, quiet.stderr).toBe(0);
      expect(quiet.stderr).not.toMatch(/matches no device/);
    },
  );

  it('explain: bad patterns exit 2, every one named', () => {
    const r = explainCli(tree(), '--devices-exclude', 'mlx5_[,/dev/nvidia0');
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      'slurm-otel: --devices-exclude "mlx5_[": has a [ with no ] after it\n' +
        'slurm-otel: --devices-exclude "/dev/nvidia0": patterns name devices (mlx5_0, nvidia0), not paths\n',
    );
  });
});
