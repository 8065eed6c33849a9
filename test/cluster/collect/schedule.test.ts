/**
 * The daemon's schedule against a fake slurmrestd whose /jobs is slow: each sub-collector starts
 * on every tick on its own, so /nodes and /diag keep their pace; the in-flight limit decides how
 * many /jobs requests overlap, and every tick it refuses is counted. Assertions are on request
 * counts and order, not on wall-clock durations.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterRunner } from '../../../src/cluster/agent.js';
import { staticToken } from '../../../src/cluster/api/auth.js';
import { SlurmClient } from '../../../src/cluster/api/client.js';
import { FAILURE_KINDS } from '../../../src/cluster/api/failures.js';
import type { Schedule } from '../../../src/telemetry/runtime.js';
import { silentLogger } from '../../support/log.js';
import { parseExposition, select, valueOf } from '../../support/exposition.js';
import { FaultServer } from '../api/fault-server.js';

const JOBS = '/slurm/v0.0.44/jobs';
const NODES = '/slurm/v0.0.44/nodes';
const DIAG = '/slurm/v0.0.44/diag';

let server: FaultServer | undefined;
let runner: ClusterRunner | undefined;
let schedule: Schedule | undefined;

afterEach(async () => {
  await schedule?.stop();
  await runner?.shutdown();
  await server?.close();
  server = runner = schedule = undefined;
});

async function scheduled(opts: { jobsDelayMs: number; intervalMs: number; maxInflight: number }) {
  server = await FaultServer.start({ versions: ['v0.0.44'] });
  server.fault(JOBS, { kind: 'delay', ms: opts.jobsDelayMs });
  const api = new SlurmClient({
    server: server.url,
    tokenSource: staticToken({ token: 't', userName: 'root' }),
    requestTimeoutMs: 10_000,
    logger: silentLogger(),
  });
  runner = new ClusterRunner({
    source: { api, jobSource: 'controller', accountingLookbackMs: 3_600_000 },
    collectionIntervalMs: opts.intervalMs,
    maxInflight: opts.maxInflight,
    metrics: { host: '127.0.0.1', port: 0 },
    monitoring: { host: '127.0.0.1', port: 0 },
    resource: { serviceName: 'slurm-otel-cluster', serviceVersion: 'test', hostName: 'test' },
    logger: silentLogger(),
    close: () => api.close(),
  });
  schedule = runner.schedule(opts.intervalMs);
  return { server, runner };
}

async function until(what: string, done: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const t0 = Date.now();
  while (!(await done())) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function self(r: ClusterRunner) {
  return parseExposition((await r.self.exposition()).text);
}

describe('sub-collectors on their own schedules', () => {
  it('a slow /jobs never delays /nodes or /diag, and the ticks it cannot take are counted', async () => {
    const { server, runner } = await scheduled({ jobsDelayMs: 1500, intervalMs: 100, maxInflight: 1 });
    await until('five node refreshes while the first /jobs is pending', () => server.count(NODES) >= 5);
    expect(server.count(JOBS)).toBe(1);
    expect(server.count(DIAG)).toBeGreaterThanOrEqual(5);
    // The nodes were published without waiting for the jobs.
    const early = parseExposition(runner.pipeline.exposition.text);
    expect(select(early, 'slurm_node_info').length).toBeGreaterThan(0);
    expect(select(early, 'slurm_job_info')).toEqual([]);
    expect(
      valueOf(await self(runner), 'slurm_exporter_collector_skipped_total', { collector: 'jobs' }),
    ).toBeGreaterThanOrEqual(3);
    expect(valueOf(await self(runner), 'slurm_exporter_collector_skipped_total', { collector: 'nodes' })).toBe(0);
    expect(server.peak.get(JOBS)).toBe(1);

    await until(
      'the jobs published',
      () => select(parseExposition(runner.pipeline.exposition.text), 'slurm_job_info').length > 0,
    );
    const published = select(parseExposition(runner.pipeline.exposition.text), 'slurm_job_info').length;
    await until('a second /jobs in flight', () => server.count(JOBS) >= 2);
    // Meanwhile the last good jobs are still served, next to ever newer nodes.
    const nodesBefore = server.count(NODES);
    await until('more node refreshes', () => server.count(NODES) >= nodesBefore + 2);
    expect(select(parseExposition(runner.pipeline.exposition.text), 'slurm_job_info').length).toBe(published);
    expect(server.peak.get(JOBS)).toBe(1);
  });

  it('overlaps two runs of one sub-collector with --max-collector-inflight 2, and skips the third', async () => {
    const { server, runner } = await scheduled({ jobsDelayMs: 1500, intervalMs: 100, maxInflight: 2 });
    await until('two /jobs in flight', () => (server.active.get(JOBS) ?? 0) >= 2);
    await until(
      'a skipped /jobs tick',
      async () => valueOf(await self(runner), 'slurm_exporter_collector_skipped_total', { collector: 'jobs' }) === 1,
    );
    expect(server.peak.get(JOBS)).toBe(2);
    expect(valueOf(await self(runner), 'slurm_exporter_collector_inflight', { collector: 'jobs' })).toBe(2);
  });

  it('exposes every self-monitoring series at 0 before the first run ends', async () => {
    const { runner } = await scheduled({ jobsDelayMs: 5000, intervalMs: 60_000, maxInflight: 1 });
    const samples = await self(runner);
    for (const collector of ['nodes', 'jobs', 'diag']) {
      for (const name of ['slurm_exporter_collector_skipped_total', 'slurm_exporter_collector_stale_results_total']) {
        expect(valueOf(samples, name, { collector }), `${name}{collector="${collector}"}`).toBe(0);
      }
      // Every failure kind too, so a first failure of any kind shows in rate().
      for (const kind of FAILURE_KINDS)
        expect(
          valueOf(samples, 'slurm_exporter_collector_error_kinds_total', { collector, kind }),
          `${collector} ${kind}`,
        ).toBe(0);
      expect(valueOf(samples, 'slurm_exporter_collector_duration_seconds', { collector })).toBeDefined();
    }
    for (const name of [
      'slurm_exporter_collection_attempts_total',
      'slurm_exporter_collection_failures_total',
      'slurm_exporter_metrics_requests_total',
    ]) {
      expect(valueOf(samples, name), name).toBe(0);
    }
    expect(valueOf(samples, 'slurm_exporter_collection_duration_seconds')).toBe(0);
  });
});
