/**
 * Soperator's collector tests (TestMetricsCollector_Collect_Success, _NodeFails,
 * _NodeTopologyMetrics, _RPCMetrics), re-created on the agent's own exposition: the same inputs,
 * and each expected series with exactly Soperator's label set (an extra or missing label breaks
 * one-to-one vector matching). Rendered through the agent's pipeline, events included.
 */
import { describe, expect, it } from 'vitest';
import { CLUSTER_EVENT_SPECS } from '../../../src/cluster/metrics.js';
import type { NodeTopology, SlurmDiag } from '../../../src/cluster/model.js';
import { observe } from '../../../src/cluster/observe.js';
import type { ClusterSnapshot } from '../../../src/cluster/snapshot.js';
import { advance, INITIAL_CLUSTER_STATE, type ClusterState } from '../../../src/cluster/state.js';
import { Pipeline } from '../../../src/telemetry/pipeline.js';
import { parseExposition } from '../../support/exposition.js';
import { silentLogger } from '../../support/log.js';
import { collectSuccess, COLLECT_SUCCESS_JOB_LABELS, job, node, snapshot } from './helpers.js';

type Labels = Record<string, string>;
interface Series {
  readonly type: string;
  readonly name: string;
  readonly labels: Labels;
  readonly value: number;
}

/** One refresh after another through state and pipeline, as the agent publishes them. */
class Agent {
  private state: ClusterState = INITIAL_CLUSTER_STATE;
  private readonly pipeline = new Pipeline({
    resource: { serviceName: 'slurm-otel-cluster', serviceVersion: 'test', hostName: 'test' },
    scope: { name: 'test', version: '0' },
    logger: silentLogger(),
    eventSpecs: CLUSTER_EVENT_SPECS,
  });

  async refresh(snap: ClusterSnapshot): Promise<Series[]> {
    const next = advance(this.state, snap);
    this.state = next.state;
    this.pipeline.record(next.events);
    await this.pipeline.publish(observe(snap, snap.atMs), snap.atMs);
    const text = this.pipeline.exposition.text;
    const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]));
    return parseExposition(text).map((s) => ({
      type: (types.get(s.name) ?? types.get(s.name.replace(/_(bucket|sum|count)$/, '')) ?? '').toUpperCase(),
      name: s.name,
      labels: s.labels,
      value: s.value,
    }));
  }

  async shutdown(): Promise<void> {
    await this.pipeline.shutdown();
  }
}

/** Soperator's assertion: a series of this type, name and exactly these labels, with this value. */
function expectSeries(all: readonly Series[], type: string, name: string, labels: Labels, value?: number): void {
  const same = all.filter((s) => s.name === name && sameLabels(s.labels, labels));
  expect(same, `${type}; ${name}${JSON.stringify(labels)}`).toHaveLength(1);
  expect(same[0]?.type).toBe(type);
  if (value !== undefined) expect(same[0]?.value, name).toBe(value);
}

function sameLabels(a: Labels, b: Labels): boolean {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && a[k] === b[k]);
}

/** Soperator's assertMetricHasLabels: some series carries all of these labels. */
function expectSomeWith(all: readonly Series[], labels: Labels): void {
  expect(
    all.some((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v)),
    JSON.stringify(labels),
  ).toBe(true);
}

const T = 1722697230_000;
const DIAG: SlurmDiag = { server_thread_count: 1, rpcs_by_message_type: [], rpcs_by_user: [] } as unknown as SlurmDiag;
const withTopology = (snap: ClusterSnapshot, topology: ReadonlyMap<string, NodeTopology>): ClusterSnapshot => ({
  ...snap,
  topology: { value: topology, atMs: snap.atMs, seq: 1 },
});

describe("Soperator's TestMetricsCollector_Collect_Success", () => {
  const longReservation = 'r'.repeat(60);
  const { nodes, jobs } = collectSuccess({ reservation: longReservation });

  it('every expected series, with exactly its labels', async () => {
    const agent = new Agent();
    // Soperator advances its clock 10 s before the refresh; the agent counts between two refreshes.
    await agent.refresh(snapshot({ atMs: T, seq: 1, nodes, jobs, diag: DIAG }));
    const all = await agent.refresh(snapshot({ atMs: T + 10_000, seq: 2, nodes, jobs, diag: DIAG }));
    await agent.shutdown();
    expectSomeWith(all, {
      node_name: 'node-1',
      instance_id: 'instance-1',
      state_base: 'ALLOCATED',
      state_is_drain: 'false',
      reservation_name: longReservation.slice(0, 50),
    });
    expectSomeWith(all, { node_name: 'node-2', instance_id: 'instance-2', state_base: 'IDLE', state_is_drain: 'true' });
    const n1 = { node_name: 'node-1' };
    expectSeries(all, 'GAUGE', 'slurm_node_cpus_total', n1, 16);
    expectSeries(all, 'GAUGE', 'slurm_node_cpus_allocated', n1, 8);
    expectSeries(all, 'GAUGE', 'slurm_node_cpus_idle', n1, 8);
    expectSeries(all, 'GAUGE', 'slurm_node_cpus_effective', n1, 16);
    expectSeries(all, 'GAUGE', 'slurm_node_memory_total_bytes', n1, 2.00651309056e11);
    expectSeries(all, 'GAUGE', 'slurm_node_memory_allocated_bytes', n1, 6.7108864e10);
    expectSeries(all, 'GAUGE', 'slurm_node_memory_free_bytes', n1, 1.2582912e11);
    expectSeries(all, 'GAUGE', 'slurm_node_memory_effective_bytes', n1, 2.00651309056e11);
    expectSeries(all, 'GAUGE', 'slurm_node_partition', { node_name: 'node-1', partition: 'gpu' }, 1);
    expectSeries(all, 'GAUGE', 'slurm_node_partition', { node_name: 'node-2', partition: 'main' }, 1);
    const legacy = (base: string, drain: string) => ({
      state_base: base,
      state_is_drain: drain,
      state_is_maintenance: 'false',
      state_is_reserved: 'false',
    });
    expectSeries(all, 'COUNTER', 'slurm_node_gpu_seconds_total', { ...n1, ...legacy('ALLOCATED', 'false') }, 20);
    expectSeries(
      all,
      'COUNTER',
      'slurm_node_gpu_seconds_total',
      { node_name: 'node-2', ...legacy('IDLE', 'true') },
      10,
    );
    expectSeries(all, 'GAUGE', 'slurm_job_info', COLLECT_SUCCESS_JOB_LABELS, 1);
    const noTopology = { nodeset_name: '', nvlink_instance_group: '' };
    expectSeries(all, 'GAUGE', 'slurm_node_job', { job_id: '12345', node_name: 'node-1', ...noTopology }, 1);
    expectSeries(all, 'GAUGE', 'slurm_node_job', { job_id: '12345', node_name: 'node-2', ...noTopology }, 1);
    expectSeries(all, 'GAUGE', 'slurm_job_cpus', { job_id: '12345' }, 4);
    expectSeries(all, 'GAUGE', 'slurm_job_memory_bytes', { job_id: '12345' }, 6.7108864e10);
    expectSeries(all, 'GAUGE', 'slurm_controller_server_thread_count', {}, 1);
    // Without a Kubernetes API there is no topology: no slurm_node_nvlink_instance_group at all.
    expect(all.filter((s) => s.name === 'slurm_node_nvlink_instance_group')).toEqual([]);
  });
});

describe("Soperator's TestMetricsCollector_NodeTopologyMetrics", () => {
  it('worker-0 on a Node with a NodeSet and an NVLink instance group', async () => {
    const topology = new Map([['worker-0', { nodesetName: 'gpu-workers', nvlinkInstanceGroup: 'nvlig-1' }]]);
    const nodes = [
      node('worker-0', ['IDLE'], { instance_id: 'worker-0-instance' }),
      node('worker-1', ['IDLE'], { instance_id: 'worker-1-instance' }),
    ];
    const jobs = [job('123', ['RUNNING'], { nodes: 'worker-[0-1]' })];
    const agent = new Agent();
    const all = await agent.refresh(withTopology(snapshot({ atMs: T, seq: 1, nodes, jobs }), topology));
    await agent.shutdown();
    expectSeries(
      all,
      'GAUGE',
      'slurm_node_nvlink_instance_group',
      {
        instance_id: 'worker-0-instance',
        node_name: 'worker-0',
        nodeset_name: 'gpu-workers',
        nvlink_instance_group: 'nvlig-1',
      },
      1,
    );
    expectSeries(
      all,
      'GAUGE',
      'slurm_node_job',
      { job_id: '123', node_name: 'worker-0', nodeset_name: 'gpu-workers', nvlink_instance_group: 'nvlig-1' },
      1,
    );
    // A node whose group is unknown has no mapping series, and empty topology labels on its jobs.
    expect(all.filter((s) => s.name === 'slurm_node_nvlink_instance_group').map((s) => s.labels.node_name)).toEqual([
      'worker-0',
    ]);
    expectSeries(
      all,
      'GAUGE',
      'slurm_node_job',
      { job_id: '123', node_name: 'worker-1', nodeset_name: '', nvlink_instance_group: '' },
      1,
    );
  });
});

describe("Soperator's TestMetricsCollector_NodeFails", () => {
  const maint = node('node-maintenance', ['IDLE', 'MAINTENANCE'], {
    instance_id: 'instance-maintenance',
    tres: 'cpu=8,mem=64000M,gres/gpu=1',
    address: '10.0.0.3',
  });
  const reserved = node('node-reserved', ['IDLE', 'RESERVED'], {
    instance_id: 'instance-reserved',
    tres: 'cpu=8,mem=64000M,gres/gpu=1',
    address: '10.0.0.4',
  });

  it('GPU seconds of nodes in maintenance and in a reservation, then a fail with its reason', async () => {
    const agent = new Agent();
    await agent.refresh(snapshot({ atMs: T, seq: 1, nodes: [maint, reserved], jobs: [], diag: DIAG }));
    const first = await agent.refresh(snapshot({ atMs: T + 10_000, seq: 2, nodes: [maint, reserved], jobs: [] }));
    expectSomeWith(first, {
      node_name: 'node-maintenance',
      instance_id: 'instance-maintenance',
      state_base: 'IDLE',
      state_is_maintenance: 'true',
    });
    expectSomeWith(first, {
      node_name: 'node-reserved',
      instance_id: 'instance-reserved',
      state_base: 'IDLE',
      state_is_reserved: 'true',
    });
    const gpuLabels = (name: string, m: string, r: string): Labels => ({
      node_name: name,
      state_base: 'IDLE',
      state_is_drain: 'false',
      state_is_maintenance: m,
      state_is_reserved: r,
    });
    expectSeries(first, 'COUNTER', 'slurm_node_gpu_seconds_total', gpuLabels('node-maintenance', 'true', 'false'), 10);
    expectSeries(first, 'COUNTER', 'slurm_node_gpu_seconds_total', gpuLabels('node-reserved', 'false', 'true'), 10);

    const drained = node('node-maintenance', ['IDLE', 'MAINTENANCE', 'DRAIN'], {
      instance_id: 'instance-maintenance',
      tres: 'cpu=8,mem=64000M,gres/gpu=1',
      address: '10.0.0.3',
      reason: 'maintenance drain triggered',
    });
    const second = await agent.refresh(snapshot({ atMs: T + 20_000, seq: 3, nodes: [drained, reserved], jobs: [] }));
    await agent.shutdown();
    expectSeries(
      second,
      'COUNTER',
      'slurm_node_fails_total',
      {
        node_name: 'node-maintenance',
        reason: 'maintenance drain triggered',
        state_base: 'IDLE',
        state_is_drain: 'true',
        state_is_maintenance: 'true',
        state_is_reserved: 'false',
      },
      1,
    );
    expectSomeWith(second, {
      node_name: 'node-maintenance',
      instance_id: 'instance-maintenance',
      reason: 'maintenance drain triggered',
      state_is_drain: 'true',
      state_is_maintenance: 'true',
    });
  });
});

describe("Soperator's RPC metrics: an entry with no calls or no time has no series for it", () => {
  it('count and time are checked apart', async () => {
    const diag = {
      server_thread_count: 3,
      req_time_start: 1722690000,
      rpcs_by_message_type: [
        { message_type: 'REQUEST_PING', count: 5, total_time_us: 2_000_000 },
        { message_type: 'REQUEST_NODE_INFO', count: 3, total_time_us: 0 },
        { message_type: 'REQUEST_JOB_INFO', count: 0, total_time_us: 0 },
      ],
      rpcs_by_user: [
        { user: 'root', user_id: 0, count: 7, total_time_us: 1_500_000 },
        { user: 'idle', user_id: 1001, count: 0, total_time_us: 0 },
        { user: 'slow', user_id: 1002, count: 0, total_time_us: 10 },
      ],
    } as unknown as SlurmDiag;
    const agent = new Agent();
    const all = await agent.refresh(snapshot({ atMs: T, seq: 1, diag }));
    await agent.shutdown();
    const of = (name: string) => all.filter((s) => s.name === name).map((s) => [s.labels, s.value]);
    expect(of('slurm_controller_rpc_calls_total')).toEqual([
      [{ message_type: 'REQUEST_PING' }, 5],
      [{ message_type: 'REQUEST_NODE_INFO' }, 3],
    ]);
    expect(of('slurm_controller_rpc_duration_seconds_total')).toEqual([[{ message_type: 'REQUEST_PING' }, 2]]);
    expect(of('slurm_controller_rpc_user_calls_total')).toEqual([[{ user: 'root', user_id: '0' }, 7]]);
    expect(of('slurm_controller_rpc_user_duration_seconds_total')).toEqual([
      [{ user: 'root', user_id: '0' }, 1.5],
      [{ user: 'slow', user_id: '1002' }, 0.00001],
    ]);
    expectSeries(all, 'GAUGE', 'slurm_controller_server_thread_count', {}, 3);
  });
});
