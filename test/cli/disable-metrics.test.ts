/**
 * `--disable-metrics` through the built command, as users run it: a disabled family has no series
 * while the rest is there, from the flag or the agent's environment variable; a name the agent does
 * not know, or a self-monitoring one, stops the start with exit 2.
 */
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeCluster } from '../../src/demo/fake-cluster.js';
import { startFakeSlurmrestd, type FakeSlurmrestd } from '../../src/demo/fake-slurmrestd.js';
import { demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { parseExposition, select, type Sample } from '../support/exposition.js';
import { canMakeDeviceNodes, treeFlags } from '../support/node-tree.js';
import { tmpDir } from '../support/tmp.js';
import { BIN, cli } from '../support/cli.js';

let server: FakeSlurmrestd | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Async: the fake slurmrestd lives in this process, so the child must not block it. */
function cliAsync(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const kill = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (code) => {
      clearTimeout(kill);
      resolve({ code, stdout, stderr });
    });
  });
}

function nodeOnce(flags: string[], env: Record<string, string> = {}): Sample[] {
  const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
  const r = cli(['node', '--once', '--log-level', 'error', ...treeFlags(roots), ...flags], env);
  expect(r.code, r.stderr).toBe(0);
  return parseExposition(r.stdout);
}

async function clusterOnce(flags: string[], env: Record<string, string> = {}): Promise<Sample[]> {
  const cluster = new FakeCluster({ nodes: 6, seed: 3 });
  cluster.advance(30 * 60_000);
  server = await startFakeSlurmrestd({ cluster, versions: ['v0.0.44'], host: '127.0.0.1', port: 0 });
  const r = await cliAsync(['cluster', '--once', '--log-level', 'error', '--token-source', 'none', ...flags], {
    SLURM_EXPORTER_CLUSTER_NAME: cluster.clusterName,
    SLURM_EXPORTER_SLURM_API_SERVER: server.url,
    ...env,
  });
  expect(r.code, r.stderr).toBe(0);
  return parseExposition(r.stdout);
}

describe('--disable-metrics', () => {
  it.runIf(canMakeDeviceNodes('node --once --disable-metrics on a synthetic node'))(
    'node: ib_slurm_device_counters_total disabled has no series, the rest is there (flag and environment)',
    () => {
      const all = nodeOnce([]);
      expect(select(all, 'ib_slurm_device_counters_total').length).toBeGreaterThan(0);
      for (const off of [
        nodeOnce(['--disable-metrics', 'ib_slurm_device_counters_total']),
        nodeOnce([], { IB_SLURM_EXPORTER_DISABLE_METRICS: 'ib_slurm_device_counters' }),
      ]) {
        expect(select(off, 'ib_slurm_device_counters_total')).toEqual([]);
        expect(select(off, 'ib_slurm_job_counters_total').length).toBeGreaterThan(0);
        expect(select(off, 'ib_slurm_device_transmit_bytes_total').length).toBeGreaterThan(0);
        // Every other family is there as without the option.
        const names = (s: Sample[]) => new Set(s.map((x) => x.name));
        expect([...names(all)].filter((n) => !names(off).has(n))).toEqual(['ib_slurm_device_counters_total']);
      }
    },
  );

  it('cluster: slurm_node_info disabled has no series, the rest is there (flag and environment)', async () => {
    const all = await clusterOnce([]);
    expect(select(all, 'slurm_node_info')).toHaveLength(6);
    for (const off of [
      await clusterOnce(['--disable-metrics', 'slurm_node_info']),
      await clusterOnce([], { SLURM_EXPORTER_DISABLE_METRICS: 'slurm_node_info' }),
    ]) {
      expect(select(off, 'slurm_node_info')).toEqual([]);
      expect(select(off, 'slurm_node_cpus').length).toBeGreaterThan(0);
      expect(select(off, 'slurm_jobs')).toHaveLength(1);
    }
  });

  it.each([
    [
      ['node', '--once', '--disable-metrics', 'ib_slurm_device_counter_total'],
      {},
      'slurm-otel: --disable-metrics: unknown metric family ib_slurm_device_counter_total (did you mean ib_slurm_device_counters_total?)\n',
    ],
    [
      ['node', '--once'],
      { IB_SLURM_EXPORTER_DISABLE_METRICS: 'ib_slurm_job_counters_total,ib_slurm_exporter_cycles_total' },
      'slurm-otel: --disable-metrics: ib_slurm_exporter_cycles_total is a self-monitoring family: it cannot be disabled\n',
    ],
    [
      ['cluster', '--cluster-name', 'c', '--once', '--disable-metrics', 'slurm_node_infos'],
      {},
      'slurm-otel: --disable-metrics: unknown metric family slurm_node_infos (did you mean slurm_node_info?)\n',
    ],
    [
      ['cluster', '--cluster-name', 'c', '--once', '--disable-metrics', 'ib_slurm_device_counters_total'],
      {},
      'slurm-otel: --disable-metrics: unknown metric family ib_slurm_device_counters_total\n',
    ],
    [
      ['demo', '--no-cluster', '--disable-metrics', 'ib_slurm_device_counter_total'],
      {},
      'slurm-otel: --disable-metrics: unknown metric family ib_slurm_device_counter_total (did you mean ib_slurm_device_counters_total?)\n',
    ],
  ])('%j %j → exit 2 naming the family', (args, env, message) => {
    const r = cli(args, env);
    expect(r.stderr).toBe(message);
    expect(r.stdout).toBe('');
    expect(r.code).toBe(2);
  });
});
