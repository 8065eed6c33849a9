import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { demoTree } from '../../src/demo/scenarios.js';
import { writeProcess, writeTree } from '../../src/demo/nodetree.js';
import { tmpDir } from '../support/tmp.js';
import { canMakeDeviceNodes, rootFlags, treeFlags } from '../support/node-tree.js';
import { BIN, cli } from '../support/cli.js';

function rootArgs(): string[] {
  const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
  return treeFlags(roots);
}

describe('slurm-otel node (command line)', () => {
  it.runIf(canMakeDeviceNodes('node --once on a synthetic node'))(
    '--once prints the exposition of one cycle and exits 0',
    () => {
      const r = cli(['node', '--once', ...rootArgs(), '--log-level', 'error']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^ib_slurm_port_attribution\{device="mlx5_0",port="1",status="sole"\} 1$/m);
      expect(r.stdout).toMatch(/^ib_slurm_job_processes\{job_id="918002"\} 3$/m);
    },
  );

  it.runIf(canMakeDeviceNodes('node --once on a synthetic node'))(
    'knows a holder by the device its fd refers to (stat), not by the link text',
    () => {
      const dir = tmpDir();
      const roots = writeTree(dir, demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
      // mlx5_0 is uverbs2 (231:194). A decoy holds a regular file and a device of other numbers, both named uverbs2.
      fs.mkdirSync(path.join(dir, 'decoy/dev'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'decoy/uverbs2'), '');
      execFileSync('mknod', [path.join(dir, 'decoy/dev/uverbs2'), 'c', '1', '7']);
      const decoy = [path.join(dir, 'decoy/uverbs2'), path.join(dir, 'decoy/dev/uverbs2')];
      writeProcess(roots.procfs, { pid: 980, comm: 'decoy', links: decoy.map((target) => ({ target })) });
      const status = (flags: string[]): string | undefined =>
        /^ib_slurm_port_attribution\{device="mlx5_0",port="1",status="(\w+)"\} 1$/m.exec(
          cli(['node', '--once', ...flags, '--log-level', 'error']).stdout,
        )?.[1];
      // As written, the job's fds are symlinks to /dev/infiniband/uverbs2, which stat finds on no host
      // without HCAs: what they are is unknown, so the port is not called idle (nor sole).
      if (!fs.existsSync('/dev/infiniband')) expect(status(rootFlags(roots))).toBe('incomplete');
      // With real device nodes behind them the job is found; the decoy holds nothing.
      expect(status(treeFlags(roots))).toBe('sole');
      expect(cli(['node', '--fd-device-table', 'x']).stderr).toMatch(/unknown option '--fd-device-table'/);
    },
  );

  it.each([
    [['node', '--bogus'], /unknown option '--bogus'/],
    [['node', '--collection-interval', '5x'], /'5x' is invalid.*not a duration/],
    [['node', '--collection-interval', '0s'], /must be longer than zero/],
    [
      ['node', '--collection-interval', '30d'],
      /'--collection-interval <duration>' argument '30d' is invalid. "30d" is longer than 24d20h31m23s647ms/,
    ],
    [['node', '--metrics-bind-address', 'nowhere'], /invalid bind address "nowhere"/],
    [['node', '--log-level', 'loud'], /"loud" is not one of debug, info, warn, error/],
    [['node', '--otlp-protocol', 'grpc'], /"grpc" is not one of http\/json, http\/protobuf/],
    [['node', '--unreadable-processes', 'lax'], /'lax' is invalid. "lax" is not one of strict, ignore-outside-jobs/],
    [['explain', '--unreadable-processes', 'ignore'], /"ignore" is not one of strict, ignore-outside-jobs/],
    [['node', '--qp-counters', 'on'], /'on' is invalid. "on" is not one of off, observe, manage/],
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['node', '--once', '--web-config-file', '/nonexistent/web.yml'], /web config \/nonexistent\/web.yml: ENOENT/],
  ])('%j → exit 2 with a message naming the problem', (args, message) => {
    const r = cli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it('takes options from IB_SLURM_EXPORTER_* and lets a flag win over them', () => {
    const bad = cli(['node', '--once'], { IB_SLURM_EXPORTER_COLLECTION_INTERVAL: 'soon' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/from env 'IB_SLURM_EXPORTER_COLLECTION_INTERVAL'/);
    const badPolicy = cli(['node', '--once'], { IB_SLURM_EXPORTER_UNREADABLE_PROCESSES: 'none' });
    expect(badPolicy.code).toBe(2);
    expect(badPolicy.stderr).toMatch(
      /from env 'IB_SLURM_EXPORTER_UNREADABLE_PROCESSES' is invalid. "none" is not one of strict, ignore-outside-jobs/,
    );
    // A duration a timer cannot hold is refused from the environment as from a flag.
    const tooLong = cli(['node', '--once'], { IB_SLURM_EXPORTER_FD_RESCAN_INTERVAL: '25d' });
    expect(tooLong.code).toBe(2);
    expect(tooLong.stderr).toMatch(
      /from env 'IB_SLURM_EXPORTER_FD_RESCAN_INTERVAL' is invalid. "25d" is longer than 24d20h31m23s647ms \(2147483647 ms\)/,
    );
    const badQp = cli(['node', '--once'], { IB_SLURM_EXPORTER_QP_COUNTERS: 'all' });
    expect(badQp.code).toBe(2);
    expect(badQp.stderr).toMatch(
      /from env 'IB_SLURM_EXPORTER_QP_COUNTERS' is invalid. "all" is not one of off, observe, manage/,
    );
    const roots = rootArgs();
    // A sysfs without an InfiniBand class: a node without HCAs.
    const env = { IB_SLURM_EXPORTER_SYSFS_ROOT: tmpDir(), IB_SLURM_EXPORTER_LOG_LEVEL: 'error' };
    const flagWins = cli(['node', '--once', ...roots], env);
    expect(flagWins.stdout).toContain('ib_slurm_device_counters_total{device="mlx5_0"');
    const envOnly = cli(['node', '--once', ...roots.slice(2)], env);
    expect(envOnly.code).toBe(0);
    expect(envOnly.stdout).not.toContain('ib_slurm_device_counters_total{');
  });

  it.each([
    ['node', 'IB_SLURM_EXPORTER_OTLP_BEARER_TOKEN_FILE', {}],
    [
      'cluster',
      'SLURM_EXPORTER_OTLP_BEARER_TOKEN_FILE',
      { SLURM_EXPORTER_CLUSTER_NAME: 'c', SLURM_EXPORTER_SLURM_API_SERVER: 'http://127.0.0.1:1' },
    ],
  ])('%s: %s naming a missing file stops the start with exit 2, naming the file', (agent, variable, more) => {
    const missing = path.join(tmpDir(), 'no-token');
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', [variable]: missing, ...more };
    const r = cli([agent, '--once'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`cannot read bearer token file ${missing}: ENOENT`);
  });

  it.each([
    ['--sysfs-root', 'no HCA could be found'],
    ['--procfs-root', "no process's fds could be read"],
    ['--cgroup-root', 'no Slurm job could be found'],
  ])('%s naming no directory stops the start with exit 2, naming the flag and the path', (flag, lost) => {
    const args = rootArgs();
    const missing = path.join(tmpDir(), 'not-here');
    const at = args.indexOf(flag) + 1;
    const r = cli(['node', '--once', ...args.map((a, i) => (i === at ? missing : a))]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`slurm-otel: ${flag} ${missing} does not exist: ${lost}\n`);
    const file = path.join(tmpDir(), 'a-file');
    fs.writeFileSync(file, '');
    const notDir = cli(['node', '--once', ...args.map((a, i) => (i === at ? file : a))]);
    expect(notDir.code).toBe(2);
    expect(notDir.stderr).toContain(`${flag} ${file} is not a directory`);
  });

  it('rejects bad OTEL_* values with exit 2', () => {
    expect(
      cli(['node', '--once'], {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      }).stderr,
    ).toMatch(/grpc is not supported/);
    const r = cli(['node', '--once'], { OTEL_RESOURCE_ATTRIBUTES: 'novalue' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/OTEL_RESOURCE_ATTRIBUTES/);
  });

  it.runIf(process.geteuid?.() === 0)(
    '--once and explain exit 1 naming the reason when class/infiniband cannot be listed',
    () => {
      const args = rootArgs();
      const sysfs = args[1] as string;
      fs.chmodSync(path.join(sysfs, 'class/infiniband'), 0o000);
      // As nobody, so that mode 000 really denies: a real EACCES from the kernel.
      const asNobody = {
        encoding: 'utf8' as const,
        env: { PATH: process.env.PATH ?? '' },
        timeout: 20_000,
        uid: 65534,
        gid: 65534,
      };
      for (const cmd of [['node', '--once', '--log-level', 'error'], ['explain']]) {
        const r = spawnSync(process.execPath, [BIN, ...cmd, ...args], asNobody);
        expect(r.status, cmd[0]).toBe(1);
        expect(r.stderr).toMatch(/^slurm-otel: collection failed: cannot list .*class\/infiniband: .*EACCES\n$/);
        expect(r.stdout).toBe('');
      }
    },
  );

  it('--help lists every option with its environment variable and default', () => {
    const r = cli(['node', '--help']);
    expect(r.code).toBe(0);
    const help = r.stdout.replace(/\s+/g, ' ');
    expect(help).toContain(
      '--collection-interval <duration> how often a cycle reads the node (default: 15s, env: IB_SLURM_EXPORTER_COLLECTION_INTERVAL)',
    );
  });
});
