/**
 * The whole cluster agent (client, negotiation, decoders, rules, pipeline)
 * against a fake slurmrestd serving one API version at a time: what it
 * exports must be what the fake cluster holds.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterRunner } from '../../../src/cluster/agent.js';
import { baseState } from '../../../src/cluster/node-state.js';
import type { FakeSlurmrestd } from '../../../src/demo/fake-slurmrestd.js';
import { RENDER_VERSIONS, truthSeenThrough, type RenderVersion } from '../../../src/demo/slurm-render.js';
import { clusterAgentOptions, fakeSlurm } from '../../support/agents.js';
import { parseExposition, select, valueOf } from '../../support/exposition.js';

const TOKEN = 'test-token';
let server: FakeSlurmrestd | undefined;
let runner: ClusterRunner | undefined;

afterEach(async () => {
  await runner?.shutdown();
  await server?.close();
  runner = server = undefined;
});

async function start(versions: readonly RenderVersion[], jobSource: 'controller' | 'accounting' = 'controller') {
  const slurm = await fakeSlurm(versions, TOKEN);
  server = slurm.server;
  runner = new ClusterRunner(clusterAgentOptions(slurm, TOKEN, jobSource));
  const { cluster } = slurm;
  return { cluster, runner };
}

describe('cluster agent against a fake slurmrestd, one API version at a time', () => {
  for (const version of RENDER_VERSIONS) {
    it(`exports exactly the nodes, jobs and controller statistics the cluster holds (${version})`, async () => {
      const { cluster, runner } = await start([version]);
      const tick = await runner.collect();
      expect(tick.failed).toEqual([]);
      const truth = truthSeenThrough(version, cluster.knownTruth());
      const samples = parseExposition(runner.pipeline.exposition.text);
      const nodes = select(samples, 'slurm_node_info');
      expect(nodes.map((s) => s.labels.node_name).sort()).toEqual(truth.nodes.map((n) => n.name).sort());
      for (const n of truth.nodes) expect(nodes.find((s) => s.labels.node_name === n.name)?.labels.state_base, n.name).toBe(baseState(n.state));
      const jobs = select(samples, 'slurm_job_info');
      expect(new Set(jobs.map((s) => s.labels.job_id))).toEqual(new Set(truth.jobs.map((j) => j.job_id)));
      for (const j of truth.jobs) expect(jobs.find((s) => s.labels.job_id === j.job_id)?.labels.job_state, j.job_id).toBe(j.state[0] ?? '');
      expect(valueOf(samples, 'slurm_controller_server_thread_count')).toBe(truth.diag.server_thread_count);
      const rpcs = truth.diag.rpcs_by_message_type;
      expect(select(samples, 'slurm_controller_rpc_calls_total').length).toBe(new Set(rpcs.map((r) => r.message_type)).size);
    });
  }
});

describe('cluster agent faults, end to end', () => {
  it('keeps every family from the last good collection while slurmrestd is gone, counting each failure', async () => {
    const { runner } = await start(['v0.0.44']);
    await runner.collect();
    const before = select(parseExposition(runner.pipeline.exposition.text), 'slurm_node_info').length;
    expect(before).toBe(12);
    await server?.close();
    server = undefined;
    const tick = await runner.collect();
    expect([...tick.failed].sort()).toEqual(['diag', 'jobs', 'nodes']);
    const after = parseExposition(runner.pipeline.exposition.text);
    expect(select(after, 'slurm_node_info').length).toBe(before);
    expect(select(after, 'slurm_job_info').length).toBeGreaterThan(0);
    const self = parseExposition((await runner.self.exposition()).text);
    for (const collector of ['nodes', 'jobs', 'diag']) expect(valueOf(self, 'slurm_exporter_collector_errors_total', { collector })).toBe(1);
    expect(valueOf(self, 'slurm_exporter_collection_failures_total')).toBe(1);
    expect(valueOf(self, 'slurm_exporter_collection_attempts_total')).toBe(2);
  });

  it('serves a landing page saying how each sub-collector fared, escaped', async () => {
    const { runner } = await start(['v0.0.44']);
    expect(runner.landing.status).toBe(503);
    await runner.collect();
    const ok = runner.landing;
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('<a href="/metrics">/metrics</a>');
    expect(ok.text).toMatch(/data-collector="nodes" data-ok="true"><td>nodes<\/td><td>ok<\/td>.*<td>12 items<\/td>/);
    await server?.close();
    server = undefined;
    await runner.collect();
    expect(runner.landing.text).toMatch(/data-collector="jobs" data-ok="false"><td>jobs<\/td><td><span class="warn">failed; serving the last good data/);
    expect(runner.landing.text).toMatch(/data-collector="jobs" .*<td class="num" data-runs>2<\/td><td class="num" data-errors>1<\/td>/);
    expect(runner.landing.text).toMatch(/<table id="errors">[^]*<td>jobs<\/td><td><code>[^<]+<\/code>/);
    expect(runner.landing.text).not.toContain(TOKEN);
  });

  it('follows the server to another API version when the negotiated one disappears', async () => {
    const { runner } = await start(['v0.0.44', 'v0.0.43']);
    expect((await runner.collect()).failed).toEqual([]);
    server?.setVersions(['v0.0.43']);
    expect((await runner.collect()).failed).toEqual([]);
    expect(select(parseExposition(runner.pipeline.exposition.text), 'slurm_node_info').length).toBe(12);
  });

  it('reads jobs from slurmdbd with the accounting source', async () => {
    const { cluster, runner } = await start(['v0.0.44'], 'accounting');
    expect((await runner.collect()).failed).toEqual([]);
    const jobs = select(parseExposition(runner.pipeline.exposition.text), 'slurm_job_info');
    const running = cluster.knownTruth().accountingJobs.filter((j) => j.state[0] === 'RUNNING');
    expect(running.length).toBeGreaterThan(0);
    for (const j of running) expect(jobs.some((s) => s.labels.job_id === j.job_id && s.labels.job_state === 'RUNNING'), j.job_id).toBe(true);
    expect(jobs.every((s) => s.labels.user_id === '')).toBe(true);
  });
});
