/**
 * The daemon's schedule against a fake slurmrestd whose /jobs is slow: each sub-collector starts
 * on every tick on its own, so /nodes and /diag keep their pace; the in-flight limit decides how
 * many /jobs requests overlap, and every tick it refuses is counted. The test fires the ticks
 * itself and holds /jobs until it releases it, so every count is exact: nothing depends on how
 * fast the machine is.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterRunner } from '../../../src/cluster/agent.js';
import { staticToken } from '../../../src/cluster/api/http/auth.js';
import { SlurmClient } from '../../../src/cluster/api/client.js';
import { FAILURE_KINDS } from '../../../src/cluster/http/failure.js';
import type { Repeat, Schedule } from '../../../src/telemetry/runtime.js';
import { silentLogger } from '../../support/log.js';
import { parseExposition, select, valueOf } from '../../support/exposition.js';
import { FaultServer } from '../api/fault-server.js';
import { waitFor } from '../../support/tools.js';

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

/** A collection timer the test fires itself: each fire() is one tick, whatever the wall clock says. */
class ManualTimer {
  private tick: (() => void) | undefined;
  readonly repeat: Repeat = (_intervalMs, fn) => {
    this.tick = fn;
    return () => (this.tick = undefined);
  };

  fire(): void {
    if (this.tick === undefined) throw new Error('no schedule running');
    this.tick();
  }
}

/** The agent on a fake slurmrestd that holds every /jobs request until the test releases it. */
async function scheduled(opts: { maxInflight: number }) {
  server = await FaultServer.start({ versions: ['v0.0.44'] });
  server.fault(JOBS, { kind: 'held' });
  const api = new SlurmClient({
    server: server.url,
    tokenSource: staticToken({ token: 't', userName: 'root' }),
    requestTimeoutMs: 60_000,
    logger: silentLogger(),
  });
  runner = new ClusterRunner({
    source: { api, jobSource: 'controller', accountingLookbackMs: 3_600_000 },
    collectionIntervalMs: 60_000,
    maxInflight: opts.maxInflight,
    metrics: { host: '127.0.0.1', port: 0 },
    monitoring: { host: '127.0.0.1', port: 0 },
    resource: { serviceName: 'slurm-otel-cluster', serviceVersion: 'test', hostName: 'test' },
    logger: silentLogger(),
    close: () => api.close(),
  });
  const timer = new ManualTimer();
  schedule = runner.schedule(60_000, timer.repeat);
  return { server, runner, timer };
}

async function self(r: ClusterRunner) {
  return parseExposition((await r.self.exposition()).text);
}

const published = (r: ClusterRunner, name: string) => select(parseExposition(r.pipeline.exposition.text), name);

/** Waits until tick `n`'s /nodes and /diag runs have been answered and have ended. */
async function ticked(server: FaultServer, r: ClusterRunner, n: number): Promise<void> {
  await waitFor(`tick ${n}: /nodes and /diag answered and ended`, async () => {
    const s = await self(r);
    const idle = (collector: string) => valueOf(s, 'slurm_exporter_collector_inflight', { collector }) === 0;
    return server.count(NODES) === n && server.count(DIAG) === n && idle('nodes') && idle('diag');
  });
}

describe('sub-collectors on their own schedules', () => {
  it('a slow /jobs never delays /nodes or /diag, and the ticks it cannot take are counted', async () => {
    const { server, runner, timer } = await scheduled({ maxInflight: 1 });
    await ticked(server, runner, 1);
    for (let n = 2; n <= 5; n++) {
      timer.fire();
      await ticked(server, runner, n);
    }
    // Five node and diag refreshes while the first /jobs is still unanswered.
    expect(server.count(JOBS)).toBe(1);
    expect(server.active.get(JOBS)).toBe(1);
    const skipped = async (collector: string) =>
      valueOf(await self(runner), 'slurm_exporter_collector_skipped_total', { collector });
    expect(await skipped('jobs')).toBe(4);
    expect(await skipped('nodes')).toBe(0);
    expect(await skipped('diag')).toBe(0);
    // The nodes were published without waiting for the jobs.
    await waitFor('the nodes published', () => published(runner, 'slurm_node_info').length > 0);
    expect(published(runner, 'slurm_job_info')).toEqual([]);
    expect(server.peak.get(JOBS)).toBe(1);

    expect(server.release(JOBS)).toBe(1);
    const jobs = await waitFor('the jobs published', () => published(runner, 'slurm_job_info').length || undefined);
    timer.fire();
    await ticked(server, runner, 6);
    expect(server.count(JOBS)).toBe(2);
    // Meanwhile the last good jobs are still served, next to ever newer nodes.
    for (let n = 7; n <= 8; n++) {
      timer.fire();
      await ticked(server, runner, n);
    }
    expect(published(runner, 'slurm_job_info')).toHaveLength(jobs);
    expect(await skipped('jobs')).toBe(6);
    expect(server.peak.get(JOBS)).toBe(1);
  });

  it('overlaps two runs of one sub-collector with --max-collector-inflight 2, and skips the third', async () => {
    const { server, runner, timer } = await scheduled({ maxInflight: 2 });
    await ticked(server, runner, 1);
    timer.fire();
    await waitFor('two /jobs in flight', () => server.active.get(JOBS) === 2);
    timer.fire();
    await ticked(server, runner, 3);
    expect(valueOf(await self(runner), 'slurm_exporter_collector_skipped_total', { collector: 'jobs' })).toBe(1);
    expect(server.count(JOBS)).toBe(2);
    expect(server.peak.get(JOBS)).toBe(2);
    expect(valueOf(await self(runner), 'slurm_exporter_collector_inflight', { collector: 'jobs' })).toBe(2);
  });

  it('exposes every self-monitoring series at 0 before the first run ends', async () => {
    const { runner } = await scheduled({ maxInflight: 1 });
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
