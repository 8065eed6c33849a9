/**
 * The whole cluster agent (client, negotiation, decoders, rules, pipeline)
 * against a fake slurmrestd serving one API version at a time: what it
 * exports must be what the fake cluster holds.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterRunner } from '../../../src/cluster/agent.js';
import { baseState } from '../../../src/cluster/node-state.js';
import { arrayTaskCount } from '../../../src/cluster/observe/native.js';
import { JOB_TERMINAL_STATES } from '../../../src/cluster/model.js';
import type { FakeSlurmrestd } from '../../../src/demo/fake-slurmrestd.js';
import {
  FAKE_LICENSE_TOTAL,
  RENDER_VERSIONS,
  type Endpoint,
  type RenderVersion,
} from '../../../src/demo/slurm-render.js';
import { OPTIONAL_SUB_COLLECTORS, type OptionalSubCollector } from '../../../src/cluster/snapshot.js';
import { clusterAgentOptions, fakeSlurm, type TestClusterOptions } from '../../support/agents.js';
import { expositionKeyErrors } from '../../support/catalogue-keys.js';
import { parseExposition, select, sumOf, valueOf } from '../../support/exposition.js';
import { startReceiver } from '../../support/otlp-receiver.js';
import { EXTRA_SPECS, NATIVE_SPECS, NATIVE_USER_ACCOUNT_SPECS } from '../../../src/cluster/metrics.js';
import { knownTruth, truthSeenThrough } from '../../support/fake-cluster-truth.js';
import { limitSamples, limitsTruth } from '../../support/fake-limits-truth.js';
import type { FakeCluster } from '../../../src/demo/fake-cluster.js';

const TOKEN = 'test-token';
let server: FakeSlurmrestd | undefined;
let runner: ClusterRunner | undefined;

afterEach(async () => {
  await runner?.shutdown();
  await server?.close();
  runner = server = undefined;
});

interface StartOptions {
  readonly failing?: readonly Endpoint[];
  /** Default: every optional sub-collector. */
  readonly optional?: readonly OptionalSubCollector[];
  readonly otlpUrl?: string;
  readonly userAccountMetrics?: boolean;
  readonly accountingLimits?: boolean;
  /** Paths the fake answers 404. */
  readonly missing?: readonly string[];
  readonly client?: TestClusterOptions['client'];
}

async function start(
  versions: readonly RenderVersion[],
  jobSource: 'controller' | 'accounting' = 'controller',
  o: StartOptions = {},
) {
  const slurm = await fakeSlurm(versions, TOKEN, o.failing, o.missing);
  server = slurm.server;
  runner = new ClusterRunner(
    clusterAgentOptions(slurm, TOKEN, { ...o, jobSource, optional: o.optional ?? OPTIONAL_SUB_COLLECTORS }),
  );
  const { cluster } = slurm;
  return { cluster, runner };
}

describe('cluster agent against a fake slurmrestd, one API version at a time', () => {
  for (const version of RENDER_VERSIONS) {
    it(`exports exactly the nodes, jobs and controller statistics the cluster holds (${version})`, async () => {
      const { cluster, runner } = await start([version]);
      const tick = await runner.collect();
      expect(tick.failed).toEqual([]);
      const truth = truthSeenThrough(version, knownTruth(cluster));
      const samples = parseExposition(runner.pipeline.exposition.text);
      const nodes = select(samples, 'slurm_node_info');
      expect(nodes.map((s) => s.labels.node_name).sort()).toEqual(truth.nodes.map((n) => n.name).sort());
      for (const n of truth.nodes)
        expect(nodes.find((s) => s.labels.node_name === n.name)?.labels.state_base, n.name).toBe(baseState(n.state));
      const jobs = select(samples, 'slurm_job_info');
      expect(new Set(jobs.map((s) => s.labels.job_id))).toEqual(new Set(truth.jobs.map((j) => j.job_id)));
      for (const j of truth.jobs)
        expect(jobs.find((s) => s.labels.job_id === j.job_id)?.labels.job_state, j.job_id).toBe(j.state[0] ?? '');
      expect(valueOf(samples, 'slurm_controller_server_thread_count')).toBe(truth.diag.server_thread_count);
      const rpcs = truth.diag.rpcs_by_message_type;
      expect(select(samples, 'slurm_controller_rpc_calls_total').length).toBe(
        new Set(rpcs.map((r) => r.message_type)).size,
      );
    });
  }
});

describe('every exported sample carries exactly the keys its catalogue entry declares', () => {
  for (const version of RENDER_VERSIONS) {
    for (const source of ['controller', 'accounting'] as const) {
      it(`${version}, jobs from the ${source}, with the per-user and per-account families`, async () => {
        const { runner } = await start([version], source, { userAccountMetrics: true });
        expect((await runner.collect()).failed).toEqual([]);
        const samples = parseExposition(runner.pipeline.exposition.text);
        expect(samples.length).toBeGreaterThan(100);
        expect(expositionKeyErrors(samples)).toEqual([]);
      });
    }
  }
});

/** Scheduler families each version's /diag carries (the rest must be absent, not 0). */
const SCHEDULER_SINCE: Readonly<Record<string, number>> = {
  slurm_schedule_cycle_cnt: 38,
  slurm_sched_mean_cycle: 38,
  slurm_bf_depth_mean: 38,
  slurm_sdiag_jobs_submitted: 38,
  slurm_sched_exit_end: 40,
  slurm_bf_exit_end: 40,
  slurm_bf_cycle_tot: 40,
  slurm_bf_queue_len_tot: 40,
  slurm_schedule_cycle_tot: 41,
  slurm_schedule_cycle_depth: 41,
  slurm_bf_table_size_tot: 41,
};

describe("Slurm's native families through a fake slurmrestd, one API version at a time", () => {
  for (const version of RENDER_VERSIONS) {
    it(`counts nodes, jobs and partitions as the cluster holds them, and serves the scheduler fields ${version} carries (${version})`, async () => {
      const { cluster, runner } = await start([version]);
      expect((await runner.collect()).failed).toEqual([]);
      const truth = truthSeenThrough(version, knownTruth(cluster));
      const samples = parseExposition(runner.pipeline.exposition.text);
      const minor = Number(version.slice(-2));
      expect(valueOf(samples, 'slurm_nodes')).toBe(truth.nodes.length);
      // slurmctld counts each task an array record holds; drain without the draining nodes.
      const tasks = (js: typeof truth.jobs): number => js.reduce((a, j) => a + arrayTaskCount(j), 0);
      expect(valueOf(samples, 'slurm_jobs')).toBe(tasks(truth.jobs));
      expect(valueOf(samples, 'slurm_jobs_running')).toBe(truth.jobs.filter((j) => j.state[0] === 'RUNNING').length);
      expect(valueOf(samples, 'slurm_jobs_pending')).toBe(tasks(truth.jobs.filter((j) => j.state[0] === 'PENDING')));
      expect(valueOf(samples, 'slurm_nodes_drain')).toBe(
        truth.nodes.filter((n) => n.state.flags.includes('DRAIN') && !['ALLOCATED', 'MIXED'].includes(n.state.base))
          .length,
      );
      const partitions = [...new Set(truth.nodes.flatMap((n) => n.partitions))];
      expect(valueOf(samples, 'slurm_partitions')).toBe(partitions.length);
      for (const p of partitions) {
        const nodes = truth.nodes.filter((n) => n.partitions.includes(p));
        expect(valueOf(samples, 'slurm_partition_nodes', { partition: p }), p).toBe(nodes.length);
        expect(valueOf(samples, 'slurm_partition_cpus', { partition: p }), p).toBe(
          nodes.reduce((a, n) => a + (n.cpus ?? 0), 0),
        );
        expect(valueOf(samples, 'slurm_partition_nodes_cpus_alloc', { partition: p }), p).toBe(
          nodes.reduce((a, n) => a + (n.alloc_cpus ?? 0), 0),
        );
        // Records not yet finished, a multi-partition one in the last partition it lists.
        expect(valueOf(samples, 'slurm_partition_jobs', { partition: p }), p).toBe(
          truth.jobs.filter(
            (j) => (j.partition ?? '').split(',').at(-1) === p && !JOB_TERMINAL_STATES.has(j.state[0] ?? ''),
          ).length,
        );
      }
      const first = truth.nodes[0]?.name ?? '';
      expect(valueOf(samples, 'slurm_node_cpus', { node: first })).toBe(truth.nodes[0]?.cpus);
      // slurmctld's meaning of the name is on its own path; /metrics has Soperator's (node_name only).
      const nodesPath = parseExposition(runner.pipeline.section('/metrics/nodes').text);
      expect(select(nodesPath, 'slurm_node_cpus_effective', { node: first }).length).toBe(minor >= 40 ? 1 : 0);
      expect(select(samples, 'slurm_node_cpus_effective').every((s) => !('node' in s.labels))).toBe(true);
      expect(valueOf(samples, 'slurm_schedule_cycle_cnt')).toBe(truth.diag.schedule_cycle_total);
      for (const [name, since] of Object.entries(SCHEDULER_SINCE))
        expect(select(samples, name).length, name).toBe(minor >= since ? 1 : 0);
      expect(select(samples, 'slurm_bf_cycle_max').length).toBe(minor === 40 ? 0 : 1);
      if (minor >= 41) expect(valueOf(samples, 'slurm_schedule_cycle_tot')).toBe(truth.diag.schedule_cycle_sum);
    });

    it(`serves the per-user and per-account families on their own path, as slurmctld does; on /metrics only when asked (${version})`, async () => {
      const { runner } = await start([version]);
      expect((await runner.collect()).failed).toEqual([]);
      const path = parseExposition(runner.pipeline.section('/metrics/jobs-users-accts').text);
      const users = new Set(select(path, 'slurm_user_jobs').map((s) => s.labels.username));
      expect(users.size).toBeGreaterThan(1);
      expect(select(path, 'slurm_account_jobs').length).toBeGreaterThan(1);
      const main = parseExposition(runner.pipeline.exposition.text);
      expect(main.filter((s) => s.name.startsWith('slurm_user_') || s.name.startsWith('slurm_account_'))).toEqual([]);
    });

    it(`counts pending jobs by reason and partition, and reads the license pools (${version})`, async () => {
      const { cluster, runner } = await start([version]);
      expect((await runner.collect()).failed).toEqual([]);
      const truth = truthSeenThrough(version, knownTruth(cluster));
      const samples = parseExposition(runner.pipeline.exposition.text);
      const pending = truth.jobs.filter((j) => j.state[0] === 'PENDING');
      expect(pending.length).toBeGreaterThan(0);
      const reasons = select(samples, 'slurm_jobs_pending_reason');
      expect(reasons.reduce((a, s) => a + s.value, 0)).toBe(pending.length);
      for (const s of reasons) {
        expect(s.value, JSON.stringify(s.labels)).toBe(
          pending.filter((j) => (j.state_reason ?? '') === s.labels.reason && j.partition === s.labels.partition)
            .length,
        );
      }
      const used = Math.min(FAKE_LICENSE_TOTAL - 2, truth.jobs.filter((j) => j.state[0] === 'RUNNING').length);
      expect(valueOf(samples, 'slurm_license_total', { license: 'fluent' })).toBe(FAKE_LICENSE_TOTAL);
      expect(valueOf(samples, 'slurm_license_used', { license: 'fluent' })).toBe(used);
      expect(valueOf(samples, 'slurm_license_free', { license: 'fluent' })).toBe(FAKE_LICENSE_TOTAL - 2 - used);
      expect(valueOf(samples, 'slurm_license_reserved', { license: 'fluent' })).toBe(2);
    });

    it(`reads fairshare per account and user from v0.0.40, and asks nothing of an older API (${version})`, async () => {
      const { cluster, runner } = await start([version]);
      expect((await runner.collect()).failed).toEqual([]);
      const truth = truthSeenThrough(version, knownTruth(cluster));
      const samples = parseExposition(runner.pipeline.exposition.text);
      const factors = select(samples, 'slurm_fairshare_factor');
      if (version === 'v0.0.38') {
        expect(factors).toHaveLength(0);
        expect([...(server?.requests.keys() ?? [])].filter((p) => p.includes('shares'))).toEqual([]);
        return;
      }
      const users = new Set(truth.jobs.map((j) => `${j.account ?? ''}/${j.user_name ?? ''}`));
      expect(
        factors
          .filter((s) => s.labels.user !== '')
          .map((s) => `${s.labels.account}/${s.labels.user}`)
          .sort(),
      ).toEqual([...users].sort());
      for (const s of factors.filter((x) => x.labels.user !== '')) {
        const mine = truth.jobs.filter((j) => j.account === s.labels.account && j.user_name === s.labels.user).length;
        expect(valueOf(samples, 'slurm_fairshare_raw_usage', s.labels), JSON.stringify(s.labels)).toBe(100 * mine);
        expect(s.value).toBeCloseTo(1 - mine / truth.jobs.length, 9);
      }
      expect(valueOf(samples, 'slurm_fairshare_raw_usage', { account: 'root', user: '', partition: '' })).toBe(
        100 * truth.jobs.length,
      );
    });

    it(`reads reservations, with the states of their nodes (${version})`, async () => {
      const { cluster, runner } = await start([version]);
      expect((await runner.collect()).failed).toEqual([]);
      const truth = truthSeenThrough(version, knownTruth(cluster));
      const samples = parseExposition(runner.pipeline.exposition.text);
      const two = truth.nodes.slice(0, 2);
      const info = select(samples, 'slurm_reservation_info');
      expect(info.map((s) => s.labels)).toEqual([
        {
          reservation: 'maint-window',
          partition: two[0]?.partitions[0],
          flags: 'MAINT,IGNORE_JOBS',
          users: 'root',
          accounts: '',
          nodes: two.map((n) => n.name).join(','),
        },
      ]);
      const from = Math.floor(truth.nowMs / 1000 / 3600) * 3600 + 3600;
      expect(valueOf(samples, 'slurm_reservation_start_time_seconds', { reservation: 'maint-window' })).toBe(from);
      expect(valueOf(samples, 'slurm_reservation_end_time_seconds', { reservation: 'maint-window' })).toBe(from + 3600);
      expect(valueOf(samples, 'slurm_reservation_nodes', { reservation: 'maint-window' })).toBe(2);
      const states = select(samples, 'slurm_reservation_nodes_state', { reservation: 'maint-window' });
      const bases = states.filter((s) =>
        ['alloc', 'mixed', 'idle', 'down', 'future', 'unknown'].includes(s.labels.state as string),
      );
      expect(bases.reduce((a, s) => a + s.value, 0)).toBe(2);
      // As slurm_nodes_drain counts: DRAIN on a node still running jobs is `draining` instead.
      const busy = (n: (typeof two)[number]): boolean => ['ALLOCATED', 'MIXED'].includes(n.state.base);
      const drain = (n: (typeof two)[number]): boolean => n.state.flags.includes('DRAIN');
      const stateCount = (state: string): number =>
        valueOf(samples, 'slurm_reservation_nodes_state', { reservation: 'maint-window', state }) ?? 0;
      expect(stateCount('drain')).toBe(two.filter((n) => drain(n) && !busy(n)).length);
      expect(stateCount('draining')).toBe(two.filter((n) => drain(n) && busy(n)).length);
    });
  }
});

const LIMIT_FAMILIES = [
  'slurm_qos_limit',
  'slurm_qos_tres_limit',
  'slurm_association_limit',
  'slurm_association_tres_limit',
] as const;

const sampleKey = (s: { name: string; labels: Readonly<Record<string, string>>; value: number }): string =>
  JSON.stringify([s.name, Object.entries(s.labels).sort(), s.value]);

/** The limit families' samples on /metrics, one key per sample. */
function exportedLimits(r: ClusterRunner): string[] {
  const samples = parseExposition(r.pipeline.exposition.text);
  return LIMIT_FAMILIES.flatMap((name) =>
    select(samples, name).map((s) => sampleKey({ name, labels: s.labels as Record<string, string>, value: s.value })),
  ).sort();
}

/** What the fake cluster's slurmdbd records say those samples must be. */
function declaredLimits(cluster: FakeCluster, version: RenderVersion): string[] {
  return limitSamples(limitsTruth(cluster.view(), version)).map(sampleKey).sort();
}

describe('QoS and association limits through a fake slurmrestd, one API version at a time', () => {
  for (const version of RENDER_VERSIONS.filter((v) => v !== 'v0.0.38')) {
    it(`exports every limit the fake's slurmdbd holds, and nothing else (${version})`, async () => {
      const { cluster, runner } = await start([version], 'controller', { accountingLimits: true });
      const tick = await runner.collect();
      expect(tick.failed).toEqual([]);
      expect(tick.absent).toEqual([]);
      const exported = exportedLimits(runner);
      expect(exported.length).toBeGreaterThan(40);
      expect(exported).toEqual(declaredLimits(cluster, version));
      expect(expositionKeyErrors(parseExposition(runner.pipeline.exposition.text))).toEqual([]);
    });
  }
});

describe("Slurm's native families over OTLP", () => {
  it('every native and beyond family on /metrics is pushed under the same name, as a gauge, with the same points', async () => {
    const rx = await startReceiver();
    try {
      const { runner } = await start(['v0.0.44'], 'controller', {
        otlpUrl: `${rx.url}/v1/metrics`,
        userAccountMetrics: true,
      });
      expect((await runner.collect()).failed).toEqual([]);
      await runner.pipeline.flush();
      const pushed = rx.requests.flatMap((r) => r.points);
      const samples = parseExposition(runner.pipeline.exposition.text);
      const ours = new Set([...NATIVE_SPECS, ...NATIVE_USER_ACCOUNT_SPECS, ...EXTRA_SPECS].map((s) => s.name));
      const exposed = [...new Set(samples.map((s) => s.name))].filter((n) => ours.has(n));
      expect(exposed.length).toBeGreaterThan(250);
      for (const name of exposed) {
        const points = pushed.filter((p) => p.metric === name);
        expect(points.length, name).toBe(select(samples, name).length);
        expect(new Set(points.map((p) => p.kind)), name).toEqual(new Set(['gauge']));
      }
      const running = pushed.find((p) => p.metric === 'slurm_jobs_running');
      expect(running?.value).toBe(valueOf(samples, 'slurm_jobs_running'));
      // The names /metrics and /metrics/nodes both use: Soperator's meaning under its own name,
      // slurmctld's as slurmctld_* in a scope of its own. No OTLP name has two meanings.
      const nodes = select(samples, 'slurm_node_info').length;
      const nodesPath = parseExposition(runner.pipeline.section('/metrics/nodes').text);
      for (const suffix of ['cpus_idle', 'cpus_effective', 'memory_free_bytes', 'memory_effective_bytes']) {
        const soperator = pushed.filter((p) => p.metric === `slurm_node_${suffix}`);
        expect(soperator.length, suffix).toBe(nodes);
        expect(
          soperator.every((p) => p.scope === 'slurm-otel/cluster' && Object.keys(p.attributes).join() === 'node_name'),
        ).toBe(true);
        const slurmctld = pushed.filter((p) => p.metric === `slurmctld_node_${suffix}`);
        expect(slurmctld.length, suffix).toBe(nodes);
        for (const p of slurmctld) {
          expect([p.scope, Object.keys(p.attributes)]).toEqual(['slurm-otel/cluster/slurmctld', ['node']]);
          expect(p.value).toBe(valueOf(nodesPath, `slurm_node_${suffix}`, { node: p.attributes.node as string }));
        }
      }
      const scopes = new Map<string, Set<string>>();
      for (const p of pushed) scopes.set(p.metric, (scopes.get(p.metric) ?? new Set()).add(p.scope));
      expect([...scopes].filter(([, s]) => s.size > 1).map(([m]) => m)).toEqual([]);
    } finally {
      await rx.close();
    }
  });
});

describe('optional sub-collectors', () => {
  for (const endpoint of ['licenses', 'partitions', 'reservations', 'shares'] as const) {
    it(`a failing /${endpoint} fails alone: counted, its families absent, every other family served`, async () => {
      const { runner } = await start(['v0.0.44'], 'controller', { failing: [endpoint] });
      expect((await runner.collect()).failed).toEqual([endpoint]);
      const samples = parseExposition(runner.pipeline.exposition.text);
      expect(select(samples, 'slurm_node_info').length).toBe(12);
      expect(select(samples, 'slurm_jobs')).toHaveLength(1);
      expect(select(samples, 'slurm_nodes')).toHaveLength(1);
      expect(select(samples, 'slurm_schedule_cycle_cnt')).toHaveLength(1);
      const own = {
        licenses: 'slurm_license_total',
        partitions: 'slurm_partitions',
        reservations: 'slurm_reservation_info',
        shares: 'slurm_fairshare_factor',
      };
      for (const [other, family] of Object.entries(own))
        expect(select(samples, family).length > 0, family).toBe(other !== endpoint);
      const self = parseExposition((await runner.self.exposition()).text);
      // The fake answers 500 with Slurm errors[] and no data.
      expect(
        valueOf(self, 'slurm_exporter_collector_error_kinds_total', { collector: endpoint, kind: 'api_errors' }),
      ).toBe(1);
      expect(sumOf(self, 'slurm_exporter_collector_errors_total', { collector: endpoint })).toBe(1);
      expect(sumOf(self, 'slurm_exporter_collector_errors_total', { collector: 'nodes' })).toBe(0);
    });
  }

  it('the limits sub-collector is absent alone when slurmdbd has no /qos: every other family is served', async () => {
    const { runner } = await start(['v0.0.44'], 'controller', { accountingLimits: true, missing: [QOS_44] });
    const tick = await runner.collect();
    expect(tick.failed).toEqual([]);
    expect(tick.absent).toEqual(['limits']);
    const samples = parseExposition(runner.pipeline.exposition.text);
    for (const name of [
      'slurm_node_info',
      'slurm_jobs',
      'slurm_partitions',
      'slurm_license_total',
      'slurm_reservation_info',
      'slurm_fairshare_factor',
    ]) {
      expect(select(samples, name).length, name).toBeGreaterThan(0);
    }
    expect(select(samples, 'slurm_qos_limit')).toHaveLength(0);
    const self = parseExposition((await runner.self.exposition()).text);
    // The fake answers the unknown path with a 404, as slurmrestd does without the plugin.
    expect(valueOf(self, 'slurm_exporter_collector_error_kinds_total', { collector: 'limits', kind: 'absent' })).toBe(
      1,
    );
    expect(sumOf(self, 'slurm_exporter_collector_errors_total', { collector: 'limits' })).toBe(1);
  });

  it('a sub-collector not chosen sends no request and has no families and no self-monitoring series', async () => {
    const { runner } = await start(['v0.0.44'], 'controller', { optional: ['partitions', 'reservations', 'shares'] });
    expect((await runner.collect()).failed).toEqual([]);
    expect(server?.requests.get('/slurm/v0.0.44/licenses/')).toBeUndefined();
    expect(server?.requests.get('/slurm/v0.0.44/partitions/')).toBe(1);
    const samples = parseExposition(runner.pipeline.exposition.text);
    expect(select(samples, 'slurm_license_total')).toHaveLength(0);
    expect(select(samples, 'slurm_partitions')).toHaveLength(1);
    const self = parseExposition((await runner.self.exposition()).text);
    expect(select(self, 'slurm_exporter_collector_errors_total', { collector: 'licenses' })).toHaveLength(0);
  });
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
    expect([...tick.failed].sort()).toEqual([
      'diag',
      'jobs',
      'licenses',
      'nodes',
      'partitions',
      'reservations',
      'shares',
    ]);
    const after = parseExposition(runner.pipeline.exposition.text);
    expect(select(after, 'slurm_node_info').length).toBe(before);
    expect(select(after, 'slurm_job_info').length).toBeGreaterThan(0);
    const self = parseExposition((await runner.self.exposition()).text);
    for (const collector of ['nodes', 'jobs', 'diag', 'partitions', 'licenses', 'reservations', 'shares']) {
      expect(
        valueOf(self, 'slurm_exporter_collector_error_kinds_total', { collector, kind: 'network' }),
        collector,
      ).toBe(1);
      expect(sumOf(self, 'slurm_exporter_collector_errors_total', { collector }), collector).toBe(1);
    }
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
    expect(runner.landing.text).toMatch(
      /data-collector="jobs" data-ok="false"><td>jobs<\/td><td><span class="warn">failed; serving the last good data/,
    );
    expect(runner.landing.text).toMatch(
      /data-collector="jobs" .*<td class="num" data-runs>2<\/td><td class="num" data-errors>1<\/td>/,
    );
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
    const running = knownTruth(cluster).accountingJobs.filter((j) => j.state[0] === 'RUNNING');
    expect(running.length).toBeGreaterThan(0);
    for (const j of running)
      expect(
        jobs.some((s) => s.labels.job_id === j.job_id && s.labels.job_state === 'RUNNING'),
        j.job_id,
      ).toBe(true);
    expect(jobs.every((s) => s.labels.user_id === '')).toBe(true);
  });
});

const requests = (s: FakeSlurmrestd, path: string): number => s.requests.get(path) ?? 0;
const QOS_44 = '/slurmdb/v0.0.44/qos/';

async function absentErrors(r: ClusterRunner, collector: string): Promise<{ absent: number; all: number }> {
  const self = parseExposition((await r.self.exposition()).text);
  return {
    absent: valueOf(self, 'slurm_exporter_collector_error_kinds_total', { collector, kind: 'absent' }) ?? NaN,
    all: sumOf(self, 'slurm_exporter_collector_errors_total', { collector }),
  };
}

const familySize = (r: ClusterRunner, name: string): number =>
  select(parseExposition(r.pipeline.exposition.text), name).length;

/**
 * Endpoints slurmrestd does not serve on the negotiated version (no slurmdbd, no plugin), counting
 * requests per path.
 */
describe('an endpoint slurmrestd does not serve', () => {
  const WAIT_MS = 600_000;
  const LICENSES = '/slurm/v0.0.44/licenses/';
  /** An agent on the fake (v0.0.44) whose client's clock the test moves. */
  const startClocked = async (o: StartOptions) => {
    const clock = { now: 1_000_000 };
    const started = await start(['v0.0.44'], 'controller', {
      ...o,
      client: { now: () => clock.now, absentRetryMs: WAIT_MS },
    });
    return { clock, server: server as FakeSlurmrestd, runner: started.runner, cluster: started.cluster };
  };

  it('slurmdbd without /qos: no renegotiation per cycle, counted once, the limit families absent', async () => {
    const { server, runner } = await startClocked({ accountingLimits: true, missing: [QOS_44] });
    await runner.collect();
    // At most one renegotiation, in the first cycle (when /qos answers before anything else did).
    const openapi = requests(server, '/openapi/v3');
    const qos = requests(server, QOS_44);
    expect(openapi).toBeLessThanOrEqual(2);
    expect(qos).toBeGreaterThanOrEqual(1);
    expect(qos).toBeLessThanOrEqual(2);
    for (let i = 0; i < 4; i++) {
      const tick = await runner.collect();
      expect(tick.absent).toEqual(['limits']);
      expect(tick.failed).toEqual([]);
    }
    expect(requests(server, '/openapi/v3')).toBe(openapi);
    expect(requests(server, QOS_44)).toBe(qos);
    expect(requests(server, '/slurm/v0.0.44/nodes/')).toBe(5);
    expect(await absentErrors(runner, 'limits')).toEqual({ absent: 1, all: 1 });
    expect(familySize(runner, 'slurm_qos_limit')).toBe(0);
    expect(familySize(runner, 'slurm_association_limit')).toBe(0);
    expect(familySize(runner, 'slurm_node_info')).toBe(12);
  });

  it('is asked again after the wait, and its families come back when it appears', async () => {
    const { clock, server, runner } = await startClocked({
      optional: ['licenses'],
      missing: ['/slurm/v0.0.44/licenses'],
    });
    expect((await runner.collect()).absent).toEqual(['licenses']);
    expect(familySize(runner, 'slurm_license_total')).toBe(0);
    server.setMissing([]);
    await runner.collect();
    expect(requests(server, LICENSES)).toBe(1);
    expect(familySize(runner, 'slurm_license_total')).toBe(0);
    clock.now += WAIT_MS;
    const tick = await runner.collect();
    expect(tick.absent).toEqual([]);
    expect(requests(server, LICENSES)).toBe(2);
    const total = select(parseExposition(runner.pipeline.exposition.text), 'slurm_license_total');
    expect(total.map((s) => s.value)).toEqual([FAKE_LICENSE_TOTAL]);
    expect(requests(server, '/openapi/v3')).toBe(1);
    expect(await absentErrors(runner, 'licenses')).toEqual({ absent: 1, all: 1 });
  });

  it('slurmdbd whose /qos appears later: the limit families come after the wait, as the fake declares them', async () => {
    const { clock, server, runner, cluster } = await startClocked({ accountingLimits: true, missing: [QOS_44] });
    expect((await runner.collect()).absent).toEqual(['limits']);
    server.setMissing([]);
    expect((await runner.collect()).absent).toEqual(['limits']);
    expect(familySize(runner, 'slurm_qos_limit')).toBe(0);
    const asked = requests(server, QOS_44);
    clock.now += WAIT_MS;
    const tick = await runner.collect();
    expect(tick.absent).toEqual([]);
    expect(tick.failed).toEqual([]);
    expect(requests(server, QOS_44)).toBe(asked + 1);
    expect(exportedLimits(runner)).toEqual(declaredLimits(cluster, 'v0.0.44'));
    expect(await absentErrors(runner, 'limits')).toEqual({ absent: 1, all: 1 });
  });

  it('that disappears drops its families rather than freezing them, and is counted once', async () => {
    const { server, runner } = await startClocked({ optional: ['licenses'] });
    await runner.collect();
    expect(familySize(runner, 'slurm_license_total')).toBe(1);
    server.setMissing([LICENSES]);
    expect((await runner.collect()).absent).toEqual(['licenses']);
    expect(familySize(runner, 'slurm_license_total')).toBe(0);
    expect(familySize(runner, 'slurm_node_info')).toBe(12);
    // Served before on this version: one renegotiation to rule out a restarted slurmrestd, then remembered.
    expect(requests(server, '/openapi/v3')).toBe(2);
    const asked = requests(server, LICENSES);
    await runner.collect();
    await runner.collect();
    expect(requests(server, LICENSES)).toBe(asked);
    expect(requests(server, '/openapi/v3')).toBe(2);
    expect(await absentErrors(runner, 'licenses')).toEqual({ absent: 1, all: 1 });
  });
});
