/**
 * The cluster agent against a real Slurm 22.05 (Debian packages, slurmdbd
 * included for GPU TRES and the accounting source) on loopback: what it
 * exports is checked against sinfo and squeue, and node transitions made with
 * scontrol show up as fails and duration observations.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyFileSigner } from '../../src/cluster/api/http/auth.js';
import { SlurmClient } from '../../src/cluster/api/client.js';
import { ClusterRunner } from '../../src/cluster/agent.js';
import type { JobSource } from '../../src/cluster/fetchers.js';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/log.js';
import { parseExposition, select, valueOf, type Sample } from '../support/exposition.js';
import { REAL_SLURM_START_TIMEOUT_MS, realSlurmGate, startRealSlurm, type RealSlurm } from '../support/real-slurm.js';
import {
  expectJobsAsSqueue,
  expectSchedulerBetween,
  realSlurmRunner,
  scontrolFields,
  sdiagCounts,
  SQUEUE_JOB_FORMAT,
} from '../support/real-slurm-agent.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startClusterAgent } from '../../src/cluster/agent.js';
import { EXTRA_SPECS, NATIVE_SPECS } from '../../src/cluster/metrics.js';
import { prometheusName } from '../../src/telemetry/spec.js';
import { startPrometheus } from '../support/prometheus.js';
import { findTool, shouldRun, toolPath, waitFor } from '../support/tools.js';

const gate = realSlurmGate();
const prometheus = findTool('prometheus', 'prometheus');

/** Names whose source field API v0.0.38 (Slurm 22.05) does not carry: absent there by design. */
const NOT_IN_V0038 = new Set(
  [...NATIVE_SPECS, ...EXTRA_SPECS].filter((s) => /From API v0\.0\.4/.test(s.description)).map(prometheusName),
);
/** The slurm_* names that Soperator's `slurm_controller` Grafana dashboard queries (34). */
const SOPERATOR_CONTROLLER_DASHBOARD_NAMES: readonly string[] = [
  'slurm_agent_cnt',
  'slurm_agent_queue_size',
  'slurm_agent_thread_cnt',
  'slurm_bf_active',
  'slurm_bf_cycle_cnt',
  'slurm_bf_cycle_last',
  'slurm_bf_exit_end',
  'slurm_bf_exit_max_job_start',
  'slurm_bf_exit_max_job_test',
  'slurm_bf_exit_state_changed',
  'slurm_bf_exit_table_limit',
  'slurm_bf_exit_timeout',
  'slurm_bf_last_depth',
  'slurm_bf_last_depth_try',
  'slurm_bf_queue_len',
  'slurm_bf_table_size',
  'slurm_bf_when_last_cycle',
  'slurm_controller_rpc_calls_total',
  'slurm_controller_rpc_duration_seconds_total',
  'slurm_controller_rpc_user_calls_total',
  'slurm_controller_rpc_user_duration_seconds_total',
  'slurm_controller_server_thread_count',
  'slurm_job_info',
  'slurm_node_info',
  'slurm_sched_exit_end',
  'slurm_sched_exit_lic',
  'slurm_sched_exit_max_depth',
  'slurm_sched_exit_max_job_start',
  'slurm_sched_exit_rpc_cnt',
  'slurm_sched_exit_timeout',
  'slurm_schedule_cycle_cnt',
  'slurm_schedule_cycle_last',
  'slurm_schedule_queue_len',
  'slurm_slurmdbd_queue_size',
];

describe.skipIf(gate.skip)('cluster agent on a real Slurm 22.05', { timeout: 90_000 }, () => {
  let slurm: RealSlurm;
  let controller: ClusterRunner;
  const jobs: Record<string, string> = {};

  const logs: string[] = [];
  /** Added to the agents' clock: the node durations test lets a minute pass without waiting for it. */
  let clockSkewMs = 0;
  function runner(jobSource: JobSource): ClusterRunner {
    return realSlurmRunner(slurm, { jobSource, logs, now: () => Date.now() + clockSkewMs });
  }

  async function collect(r: ClusterRunner): Promise<Sample[]> {
    const tick = await r.collect();
    expect(tick.failed, logs.slice(-5).join('')).toEqual([]);
    return parseExposition(r.pipeline.exposition.text);
  }

  async function sbatch(...args: string[]): Promise<string> {
    const { stdout } = await slurm.run([
      'sbatch',
      '--parsable',
      '-o',
      '/dev/null',
      '-e',
      '/dev/null',
      '--mem=100',
      ...args,
    ]);
    return stdout.trim().split(';')[0] as string;
  }

  const squeue = async (format: string) =>
    (await slurm.run(['squeue', '-h', '-o', format])).stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('|'));
  const sinfoNodes = async () =>
    new Map(
      (await slurm.run(['sinfo', '-h', '-N', '-o', '%N|%T'])).stdout
        .trim()
        .split('\n')
        .map((l) => l.split('|') as [string, string]),
    );

  beforeAll(async () => {
    // ReturnToService=1: a node an admin sets DOWN stays down until resumed (with 2 it re-registers at once).
    slurm = await startRealSlurm({ dbd: true, env: { REAL_SLURM_EXTRA_CONF: 'ReturnToService=1\nLicenses=fluent:8' } });
    jobs.running = await sbatch('-p', 'cpu', '-J', 'otel-run', '--wrap', 'sleep 600');
    jobs.held = await sbatch('-p', 'cpu', '-J', 'otel-held', '--hold', '--wrap', 'sleep 1');
    jobs.array = await sbatch('-p', 'cpu', '-J', 'otel-array', '--array=0-3', '--wrap', 'sleep 600');
    jobs.gpu = await sbatch('-p', 'gpu', '-J', 'otel-gpu', '--gres=gpu:1', '--wrap', 'sleep 600');
    jobs.licensed = await sbatch('-p', 'cpu', '-J', 'otel-lic', '-L', 'fluent:2', '--wrap', 'sleep 600');
    await waitFor('every job but the held one running', async () => {
      const states = (await squeue('%A|%T')).map(([, s]) => s);
      return states.filter((s) => s === 'RUNNING').length === 7 ? true : undefined;
    });
    controller = runner('controller');
  }, REAL_SLURM_START_TIMEOUT_MS);

  afterAll(async () => {
    await controller?.shutdown();
    await slurm?.stop();
  }, 90_000);

  it('exports every node with the state sinfo reports', async () => {
    const samples = await collect(controller);
    const sinfo = await sinfoNodes();
    const info = select(samples, 'slurm_node_info');
    expect(info.map((s) => s.labels.node_name).sort()).toEqual([...sinfo.keys()].sort());
    for (const s of info)
      expect(s.labels.state_base, s.labels.node_name).toBe(sinfo.get(s.labels.node_name as string)?.toUpperCase());
    expect(valueOf(samples, 'slurm_node_cpus_total', { node_name: slurm.nodes[0] as string })).toBe(4);
    expect(valueOf(samples, 'slurm_node_memory_total_bytes', { node_name: slurm.nodes[0] as string })).toBe(
      8000 * 2 ** 20,
    );
    expect(
      select(samples, 'slurm_node_partition', { node_name: slurm.nodes[2] as string }).map((s) => s.labels.partition),
    ).toEqual(['gpu']);
  });

  it('exports every job squeue lists, with its state, partition, name, user and array identity', async () => {
    const samples = await collect(controller);
    expectJobsAsSqueue(samples, await squeue(SQUEUE_JOB_FORMAT));
    expect(select(samples, 'slurm_job_info', { job_id: jobs.held as string })[0]?.labels.job_state_reason).toBe(
      'JobHeldUser',
    );
  });

  it('maps running jobs to the nodes squeue shows and counts allocated GPUs from TRES', async () => {
    const samples = await collect(controller);
    for (const [id, nodes] of await squeue('%A|%N')) {
      if (!nodes) continue;
      expect(
        select(samples, 'slurm_node_job', { job_id: id as string }).map((s) => s.labels.node_name),
        `job ${id}`,
      ).toEqual([nodes]);
    }
    expect(valueOf(samples, 'slurm_job_gpus', { job_id: jobs.gpu as string })).toBe(1);
  });

  it('exports controller RPC statistics from /diag', async () => {
    const samples = await collect(controller);
    expect(valueOf(samples, 'slurm_controller_server_thread_count')).toBeGreaterThan(0);
    expect(valueOf(samples, 'slurm_controller_rpc_calls_total', { message_type: 'REQUEST_JOB_INFO' })).toBeGreaterThan(
      0,
    );
    expect(select(samples, 'slurm_controller_rpc_user_calls_total', { user: 'root' }).length).toBe(1);
  });

  it("serves Slurm's native node, job and partition families as sinfo and squeue count them", async () => {
    const samples = await collect(controller);
    const nodes = (await slurm.run(['sinfo', '-h', '-N', '-o', '%N|%T'])).stdout
      .trim()
      .split('\n')
      .map((l) => l.split('|') as [string, string]);
    const distinct = new Map(nodes);
    expect(valueOf(samples, 'slurm_nodes')).toBe(distinct.size);
    const word: Record<string, string> = { allocated: 'alloc', mixed: 'mixed', idle: 'idle', down: 'down' };
    for (const [sinfoState, native] of Object.entries(word)) {
      expect(valueOf(samples, `slurm_nodes_${native}`), native).toBe(
        [...distinct.values()].filter((s) => s === sinfoState).length,
      );
    }
    // Partition, node count, CPUs allocated/idle/other/total.
    const parts = (await slurm.run(['sinfo', '-h', '-o', '%R|%D|%C'])).stdout
      .trim()
      .split('\n')
      .map((l) => l.split('|'));
    expect(valueOf(samples, 'slurm_partitions')).toBe(parts.length);
    for (const [p, count, cpus] of parts) {
      const [alloc, idle, , total] = (cpus as string).split('/').map(Number);
      const at = { partition: p as string };
      expect(valueOf(samples, 'slurm_partition_nodes', at), p).toBe(Number(count));
      expect(valueOf(samples, 'slurm_partition_cpus', at), p).toBe(total);
      expect(valueOf(samples, 'slurm_partition_nodes_cpus_alloc', at), p).toBe(alloc);
      expect(valueOf(samples, 'slurm_partition_nodes_cpus_idle', at), p).toBe(idle);
    }
    const jobRows = (await slurm.run(['squeue', '-h', '-t', 'all', '-o', '%T|%P|%r'])).stdout
      .trim()
      .split('\n')
      .map((l) => l.split('|'));
    expect(valueOf(samples, 'slurm_jobs')).toBe(jobRows.length);
    for (const state of new Set(jobRows.map((r) => r[0] as string))) {
      expect(valueOf(samples, `slurm_jobs_${state.toLowerCase()}`), state).toBe(
        jobRows.filter((r) => r[0] === state).length,
      );
    }
    expect(valueOf(samples, 'slurm_jobs_hold')).toBe(jobRows.filter((r) => r[2] === 'JobHeldUser').length);
    for (const [p] of parts)
      expect(valueOf(samples, 'slurm_partition_jobs', { partition: p as string }), p).toBe(
        jobRows.filter((r) => r[1] === p).length,
      );
    const cpus = (await squeue('%T|%C')).filter(([s]) => s === 'RUNNING').reduce((a, [, c]) => a + Number(c), 0);
    expect(valueOf(samples, 'slurm_jobs_cpus_alloc')).toBe(cpus);
    const first = slurm.nodes[0] as string;
    expect(valueOf(samples, 'slurm_node_cpus', { node: first })).toBe(4);
    // The name's two meanings, one per endpoint: Soperator's on /metrics, slurmctld's on /metrics/nodes.
    expect(select(samples, 'slurm_node_cpus_idle', { node_name: first }).map((s) => s.labels)).toEqual([
      { node_name: first },
    ]);
    const nodesPath = parseExposition(controller.pipeline.section('/metrics/nodes').text);
    expect(select(nodesPath, 'slurm_node_cpus_idle').map((s) => s.labels.node)).toContain(first);
  });

  it("serves Slurm's native scheduler families as sdiag shows them; those 22.05 lacks are absent", async () => {
    const before = await sdiagCounts(slurm);
    const samples = await collect(controller);
    expectSchedulerBetween(samples, before, await sdiagCounts(slurm));
    for (const name of [
      'slurm_agent_queue_size',
      'slurm_server_thread_cnt',
      'slurm_slurmdbd_queue_size',
      'slurm_bf_active',
      'slurm_sched_mean_cycle',
      'slurm_last_proc_req_start',
    ]) {
      expect(select(samples, name), name).toHaveLength(1);
    }
    for (const name of ['slurm_sched_exit_end', 'slurm_bf_exit_end', 'slurm_schedule_cycle_tot', 'slurm_bf_cycle_tot'])
      expect(select(samples, name), name).toHaveLength(0);
  });

  it('serves license pools, reservations and QoS limits as scontrol and sacctmgr show them', async () => {
    await slurm.run([
      'scontrol',
      'create',
      'reservation',
      'reservationname=otel-maint',
      'starttime=now+3600',
      'duration=60',
      `nodes=${slurm.nodes[3] as string}`,
      'users=root',
      'flags=maint',
    ]);
    await slurm.run(['sacctmgr', '-i', 'modify', 'qos', 'normal', 'set', 'MaxJobsPerUser=10', 'GrpTRES=cpu=64']);
    try {
      const lic = scontrolFields(
        (await slurm.run(['scontrol', '-o', 'show', 'licenses'])).stdout.split('\n')[0] as string,
      );
      const res = scontrolFields((await slurm.run(['scontrol', '-o', 'show', 'reservation', 'otel-maint'])).stdout);
      const [maxJobsPU, grpTres] = (
        await slurm.run(['sacctmgr', '-nP', 'show', 'qos', 'normal', 'format=MaxJobsPU,GrpTRES'])
      ).stdout
        .trim()
        .split('|');
      const samples = await waitFor('slurmdbd to report the new QoS limit', async () => {
        const s = await collect(controller);
        return valueOf(s, 'slurm_qos_limit', { qos: 'normal', limit: 'max_jobs_per_user' }) !== undefined
          ? s
          : undefined;
      });
      expect(lic.LicenseName).toBe('fluent');
      for (const [key, name] of [
        ['Total', 'total'],
        ['Used', 'used'],
        ['Free', 'free'],
        ['Reserved', 'reserved'],
      ] as const) {
        expect(valueOf(samples, `slurm_license_${name}`, { license: 'fluent' }), key).toBe(Number(lic[key]));
      }
      expect(Number(lic.Used)).toBe(2);
      const info = select(samples, 'slurm_reservation_info', { reservation: 'otel-maint' });
      expect(info).toHaveLength(1);
      expect(info[0]?.labels.flags).toBe(res.Flags);
      expect(info[0]?.labels.nodes).toBe(res.Nodes);
      expect(valueOf(samples, 'slurm_reservation_nodes', { reservation: 'otel-maint' })).toBe(Number(res.NodeCnt));
      expect(valueOf(samples, 'slurm_reservation_cores', { reservation: 'otel-maint' })).toBe(Number(res.CoreCnt));
      expect(valueOf(samples, 'slurm_reservation_start_time_seconds', { reservation: 'otel-maint' })).toBe(
        Date.parse(`${res.StartTime}`) / 1000,
      );
      const states = select(samples, 'slurm_reservation_nodes_state', { reservation: 'otel-maint' });
      expect(states.find((s) => ['idle', 'mixed', 'alloc'].includes(s.labels.state as string))?.value).toBe(1);
      expect(valueOf(samples, 'slurm_qos_limit', { qos: 'normal', limit: 'max_jobs_per_user' })).toBe(
        Number(maxJobsPU),
      );
      expect(`cpu=${valueOf(samples, 'slurm_qos_tres_limit', { qos: 'normal', limit: 'grp_tres', tres: 'cpu' })}`).toBe(
        grpTres,
      );
      const reasons = select(samples, 'slurm_jobs_pending_reason');
      expect(reasons.find((s) => s.labels.reason === 'JobHeldUser' && s.labels.partition === 'cpu')?.value).toBe(1);
    } finally {
      await slurm.run(['scontrol', 'delete', 'reservation=otel-maint']);
    }
  });

  it.runIf(shouldRun(prometheus))(
    "Soperator's slurm_controller dashboard: a real Prometheus scraping the agent has data for every name v0.0.38 carries",
    async () => {
      const logger = createLogger({
        level: 'error',
        format: 'json',
        destination: new Writable({ write: (_c, _e, done) => done() }),
      });
      const api = new SlurmClient({
        server: slurm.restUrl,
        tokenSource: keyFileSigner({ keyFile: slurm.jwtKeyPath, user: 'root' }),
        requestTimeoutMs: 15_000,
        logger,
      });
      const loopback = { host: '127.0.0.1', port: 0 };
      const agent = await startClusterAgent({
        source: { api, jobSource: 'controller', accountingLookbackMs: 3_600_000, clusterName: slurm.clusterName },
        collectionIntervalMs: 1000,
        maxInflight: 1,
        metrics: loopback,
        monitoring: loopback,
        resource: { serviceName: 'slurm-otel-cluster', serviceVersion: 'test', hostName: 'test' },
        logger,
        close: () => api.close(),
      });
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-controller-dashboard-'));
      const prom = await startPrometheus(toolPath(prometheus), dir, {
        'slurm-exporter': [new URL(agent.metricsUrl).host],
      });
      try {
        await prom.waitFor('count(up == 1) == 1');
        // A few collections in, every family the agent has is in the store.
        await prom.waitFor('count_over_time(slurm_schedule_cycle_cnt[5m]) >= 3');
        const names = SOPERATOR_CONTROLLER_DASHBOARD_NAMES;
        const answered = new Set<string>();
        for (const n of names) if ((await prom.query(n)).length > 0) answered.add(n);
        const carried = [...names].filter((n) => !NOT_IN_V0038.has(n)).sort();
        expect(carried.length).toBe(20);
        expect(
          carried.filter((n) => !answered.has(n)),
          'names without data',
        ).toEqual([]);
        // The scheduler exit reasons and the last backfill depths come with v0.0.40: absent on
        // 22.05, never a made-up 0.
        const absent = [...names].filter((n) => NOT_IN_V0038.has(n)).sort();
        expect(absent.length).toBe(14);
        for (const n of absent) expect(await prom.query(n), n).toEqual([]);
      } finally {
        await prom.stop();
        await agent.stop();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
    120_000,
  );

  it('counts a fail for each drained or downed node and observes outage and draining durations after resume', async () => {
    await collect(controller);
    const states = [...(await sinfoNodes())];
    const idle = states.find(([, s]) => s === 'idle')?.[0] as string;
    const busy = states.find(([, s]) => s === 'mixed' || s === 'allocated')?.[0] as string;
    const down = states.find(([n]) => n !== idle && n !== busy)?.[0] as string;
    expect(idle && busy && down).toBeTruthy();
    await slurm.run(['scontrol', 'update', `nodename=${idle}`, 'state=drain', 'reason=otel-idle-drain']);
    await slurm.run(['scontrol', 'update', `nodename=${busy}`, 'state=drain', 'reason=otel-busy-drain']);
    await slurm.run(['scontrol', 'update', `nodename=${down}`, 'state=down', 'reason=otel-down']);
    const failed = await collect(controller);
    expect(
      valueOf(failed, 'slurm_node_fails_total', { node_name: idle, reason: 'otel-idle-drain', state_is_drain: 'true' }),
    ).toBe(1);
    expect(valueOf(failed, 'slurm_node_fails_total', { node_name: busy, reason: 'otel-busy-drain' })).toBe(1);
    expect(
      valueOf(failed, 'slurm_node_fails_total', { node_name: down, reason: 'otel-down', state_base: 'DOWN' }),
    ).toBe(1);
    expect(select(failed, 'slurm_node_info', { node_name: idle })[0]?.labels.is_unavailable).toBe('true');
    expect(select(failed, 'slurm_node_info', { node_name: down })[0]?.labels.is_unavailable).toBe('true');
    expect(select(failed, 'slurm_node_info', { node_name: busy })[0]?.labels.is_unavailable).toBe('');
    // A minute passes for the agent, not for the test.
    clockSkewMs += 60_000;
    await slurm.run(['scontrol', 'update', `nodename=${idle},${busy},${down}`, 'state=resume']);
    // A resumed node is NOT_RESPONDING until its slurmd re-registers: still unavailable until then.
    const resumed = await waitFor('the three nodes available again', async () => {
      const now = await collect(controller);
      return [idle, busy, down].every(
        (n) => select(now, 'slurm_node_info', { node_name: n })[0]?.labels.is_unavailable === '',
      )
        ? now
        : undefined;
    });
    for (const n of [idle, down]) {
      expect(valueOf(resumed, 'slurm_node_unavailability_duration_seconds_count', { node_name: n }), n).toBe(1);
      expect(
        valueOf(resumed, 'slurm_node_unavailability_duration_seconds_sum', { node_name: n }),
        n,
      ).toBeGreaterThanOrEqual(60);
    }
    expect(valueOf(resumed, 'slurm_node_draining_duration_seconds_count', { node_name: busy })).toBe(1);
    expect(valueOf(resumed, 'slurm_node_fails_total', { node_name: idle, reason: 'otel-idle-drain' })).toBe(1);
    expect(select(resumed, 'slurm_node_gpu_seconds_total').reduce((a, s) => a + s.value, 0)).toBeGreaterThan(0);
  });

  it('reads the same running jobs from slurmdbd with the accounting source', async () => {
    const accounting = runner('accounting');
    try {
      const samples = await waitFor('slurmdbd to know the running jobs', async () => {
        const s = await collect(accounting);
        return select(s, 'slurm_job_info', { job_id: jobs.running as string }).length ? s : undefined;
      });
      const running = (await squeue('%A|%T')).filter(([, s]) => s === 'RUNNING').map(([id]) => id);
      for (const id of running)
        expect(
          select(samples, 'slurm_job_info', { job_id: id as string, job_state: 'RUNNING' }),
          `job ${id}`,
        ).toHaveLength(1);
      expect(valueOf(samples, 'slurm_job_gpus', { job_id: jobs.gpu as string })).toBe(1);
      expect(select(samples, 'slurm_job_info', { job_id: jobs.running as string })[0]?.labels.user_id).toBe('');
    } finally {
      await accounting.shutdown();
    }
  });
});
