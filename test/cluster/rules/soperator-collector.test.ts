/**
 * Soperator's collector tests TestMetricsCollector_Collect_Success and _RPCMetrics, re-created on
 * the agent's own exposition (_NodeFails and _NodeTopologyMetrics are in soperator-parity, decoded
 * from the wire): the same inputs,
 * and each expected series with exactly Soperator's label set (an extra or missing label breaks
 * one-to-one vector matching). Rendered through the agent's pipeline, events included.
 */
import { describe, expect, it } from 'vitest';
import type { SlurmDiag } from '../../../src/cluster/model.js';
import { Agent, expectSeries, expectSomeWith } from './agent-exposition.js';
import { collectSuccess, COLLECT_SUCCESS_JOB_LABELS, snapshot } from './helpers.js';

const T = 1722697230_000;
const DIAG: SlurmDiag = { server_thread_count: 1, rpcs_by_message_type: [], rpcs_by_user: [] } as unknown as SlurmDiag;

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
