import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeCluster } from '../../src/demo/fake-cluster.js';
import { startFakeSlurmrestd, type FakeSlurmrestd } from '../../src/demo/fake-slurmrestd.js';
import { parseExposition, select, type Sample } from '../support/exposition.js';
import { BIN, cli } from '../support/cli.js';

let server: FakeSlurmrestd | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Async: the fake server lives in this process, so the child must not block it. */
function cliAsync(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
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

/** `cluster --once` against a moving fake cluster (v0.0.44, no auth); the exposition it printed. */
async function onceAgainstFake(flags: readonly string[], env: Record<string, string> = {}): Promise<Sample[]> {
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

describe('slurm-otel cluster (command line)', () => {
  it.each([
    [['cluster'], /required option '--cluster-name <name>' not specified/],
    [['cluster', '--cluster-name', 'c', '--job-source', 'sacct'], /"sacct" is not one of controller, accounting/],
    [['cluster', '--cluster-name', 'c', '--collection-interval', 'often'], /not a duration/],
    [['cluster', '--cluster-name', 'c', '--max-collector-inflight', '0'], /not a positive integer/],
    [['cluster', '--cluster-name', 'c', '--max-response-size', 'big'], /not a size/],
    [['cluster', '--cluster-name', 'c', '--token-source', 'file', '--once'], /token source file needs --token-file/],
    [
      ['cluster', '--cluster-name', 'c', '--token-source', 'kubernetes', '--once'],
      /needs --kubeconfig-path or an in-cluster environment/,
    ],
    [
      ['cluster', '--cluster-name', 'c', '--slurm-api-ca-file', '/nonexistent.pem', '--once'],
      /--slurm-api-ca-file \/nonexistent.pem: ENOENT/,
    ],
    [['cluster', '--cluster-name', 'c', '--user-account-metrics', 'maybe'], /"maybe" is not true or false/],
    [
      ['cluster', '--cluster-name', 'c', '--optional-collectors', 'licenses,nodes'],
      /"nodes" is not one of partitions, licenses, reservations, shares/,
    ],
  ])('%j → exit 2 naming the problem', (args, message) => {
    const r = cli(args);
    expect(r.stderr).toMatch(message);
    expect(r.code).toBe(2);
  });

  it('refuses a slurmrestd URL with credentials: exit 2, one line, the password not echoed', () => {
    const r = cli([
      'cluster',
      '--cluster-name',
      'c',
      '--slurm-api-server',
      'http://admin:hunter2-secret@127.0.0.1:6820',
      '--once',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--slurm-api-server: server URL must not carry credentials/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.stderr).not.toContain('hunter2-secret');
  });

  it('--once collects from slurmrestd with SLURM_EXPORTER_* settings and prints the exposition', async () => {
    const cluster = new FakeCluster({ nodes: 6, seed: 3 });
    server = await startFakeSlurmrestd({
      cluster,
      versions: ['v0.0.45', 'v0.0.44'],
      host: '127.0.0.1',
      port: 0,
      token: 'sekret-token-value',
    });
    const r = await cliAsync(['cluster', '--once', '--log-level', 'error'], {
      SLURM_EXPORTER_CLUSTER_NAME: cluster.clusterName,
      SLURM_EXPORTER_SLURM_API_SERVER: server.url,
      SLURM_EXPORTER_TOKEN: 'sekret-token-value',
      SLURM_EXPORTER_SLURM_USER_NAME: 'root',
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const samples = parseExposition(r.stdout);
    expect(select(samples, 'slurm_node_info')).toHaveLength(6);
    expect(select(samples, 'target_info')[0]?.labels.slurm_cluster).toBe(cluster.clusterName);
  });

  it.each([
    [[], {}, 0],
    [['--user-account-metrics'], {}, 1],
    [[], { SLURM_EXPORTER_USER_ACCOUNT_METRICS: 'true' }, 1],
    [[], { SLURM_EXPORTER_USER_ACCOUNT_METRICS: 'false' }, 0],
  ])('per-user and per-account job families: flags %j, environment %j → %i', async (flags, env, want) => {
    const samples = await onceAgainstFake(flags, env);
    expect(select(samples, 'slurm_jobs')).toHaveLength(1);
    expect(select(samples, 'slurm_user_jobs').length > 0 ? 1 : 0).toBe(want);
    expect(select(samples, 'slurm_account_jobs_running').length > 0 ? 1 : 0).toBe(want);
  });

  it.each([
    [[], ['slurm_partitions'], ['slurm_license_total', 'slurm_reservation_info', 'slurm_fairshare_factor']],
    [
      ['--optional-collectors', 'licenses, shares'],
      ['slurm_license_total', 'slurm_fairshare_factor'],
      ['slurm_partitions', 'slurm_reservation_info'],
    ],
    [['--optional-collectors', 'none'], [], ['slurm_partitions', 'slurm_license_total']],
  ])('optional sub-collectors: %j → families %j, none of %j', async (flags, present, absent) => {
    const samples = await onceAgainstFake(flags);
    for (const name of present) expect(select(samples, name).length, name).toBeGreaterThan(0);
    for (const name of absent) expect(select(samples, name), name).toHaveLength(0);
    expect([...(server?.requests.keys() ?? [])].filter((p) => /licenses|reservations|shares/.test(p)).length).toBe(
      present.filter((n) => !n.includes('partitions')).length,
    );
  });

  it('reports an auth failure clearly, exits 1, and never prints the token', async () => {
    const cluster = new FakeCluster({ nodes: 2, seed: 3 });
    server = await startFakeSlurmrestd({
      cluster,
      versions: ['v0.0.44'],
      host: '127.0.0.1',
      port: 0,
      token: 'right-token',
    });
    const r = await cliAsync(['cluster', '--once', '--log-format', 'plain', '--request-retries', '0'], {
      SLURM_EXPORTER_CLUSTER_NAME: 'c',
      SLURM_EXPORTER_SLURM_API_SERVER: server.url,
      SLURM_EXPORTER_TOKEN: 'wrong-token-value',
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/collection incomplete: nodes, jobs, diag, partitions failed/);
    expect(r.stderr).toMatch(/sub-collector failed/);
    expect(r.stderr).toMatch(/auth|401|token/i);
    expect(r.stderr + r.stdout).not.toContain('wrong-token-value');
    expect(select(parseExposition(r.stdout), 'slurm_node_info')).toHaveLength(0);
    // What was printed ends its line: the shell's prompt or the next output does not run on.
    expect(r.stdout).toMatch(/\n$/);
  });
});
