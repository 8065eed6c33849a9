/**
 * Soperator's own exporter test cases (collector, job conversion), their inputs and expected
 * outputs carried over as data: what a user migrating from Soperator's exporter would check.
 * Controller and slurmdbd inputs are written in the v0.0.44 wire shape the Go structs model, and
 * decoded as slurmrestd's responses are. The cases are those of SOPERATOR_COMMIT.
 */
import { describe, expect, it } from 'vitest';
import * as v004x from '../../../src/cluster/api/decode/decode-v004x.js';
import { adjustAccountingJobs } from '../../../src/cluster/adjust-accounting.js';
import { CLUSTER_METRICS } from '../../../src/cluster/metrics.js';
import { observe } from '../../../src/cluster/observe.js';
import { jobInfoLabels } from '../../../src/cluster/observe/soperator.js';
import { jobCpuCount, jobMemoryBytes } from '../../../src/cluster/tres.js';
import type { NodeTopology, SlurmDiag, SlurmJob, SlurmNode } from '../../../src/cluster/model.js';
import { readJson } from '../fixtures.js';
import { SOPERATOR_COMMIT } from '../soperator.js';
import { Agent, expectSeries, expectSomeWith, type Labels } from './agent-exposition.js';
import { collectSuccess, COLLECT_SUCCESS_JOB_LABELS, job, ok, snapshot, valuesBy } from './helpers.js';

const MIB = 1024 * 1024;
const set = (number: number) => ({ set: true, infinite: false, number });
const unset = { set: false, infinite: false, number: 0 };

function decoded<T>(r: { ok: true; item: T } | { ok: false; reason: string }): T {
  if (!r.ok) throw new Error(r.reason);
  return r.item;
}

describe('collector: a successful collection (node-1, node-2, job 12345)', () => {
  const { nodes, jobs } = collectSuccess();
  const now = 1722697240_000;
  const out = observe(snapshot({ atMs: now, seq: 1, nodes, jobs }), now);

  it.each([
    ['slurm_node_cpus_total', 16],
    ['slurm_node_cpus_allocated', 8],
    ['slurm_node_cpus_idle', 8],
    ['slurm_node_cpus_effective', 16],
    ['slurm_node_memory_total_bytes', 2.00651309056e11],
    ['slurm_node_memory_allocated_bytes', 6.7108864e10],
    ['slurm_node_memory_free_bytes', 1.2582912e11],
    ['slurm_node_memory_effective_bytes', 2.00651309056e11],
  ])('%s{node_name="node-1"} %d', (name, value) => {
    expect(valuesBy(out, name, 'node_name')['node-1']).toBe(value);
  });

  it('job families', () => {
    expect(jobInfoLabels(jobs[0] as SlurmJob)).toEqual(COLLECT_SUCCESS_JOB_LABELS);
    expect(valuesBy(out, 'slurm_job_cpus', 'job_id')).toEqual({ 12345: 4 });
    expect(valuesBy(out, 'slurm_job_memory_bytes', 'job_id')).toEqual({ 12345: 6.7108864e10 });
  });
});

describe('job CPUs and memory: the fallbacks', () => {
  it.each<[string, Partial<SlurmJob>, number | undefined, number | undefined]>([
    [
      'MemoryPerNode with NodeCount → memory reported',
      { memory_per_node: 8192, node_count: 4 },
      undefined,
      8192 * 4 * MIB,
    ],
    ['MemoryPerNode without NodeCount → memory omitted', { memory_per_node: 8192 }, undefined, undefined],
    [
      'TresAllocated with mem wins over MemoryPerNode fallback',
      { tres_alloc_str: 'cpu=4,mem=16384M', memory_per_node: 8192 },
      4,
      16384 * MIB,
    ],
    [
      'TresRequested cpu used when TresAllocated empty',
      { tres_req_str: 'cpu=192,mem=64000M,gres/gpu=8', cpus: 1 },
      192,
      64000 * MIB,
    ],
    [
      'TresAllocated wins over TresRequested',
      { tres_alloc_str: 'cpu=4,mem=8192M', tres_req_str: 'cpu=192,mem=64000M' },
      4,
      8192 * MIB,
    ],
    [
      "TresRequested fills only the side that's missing",
      { tres_alloc_str: 'cpu=4', tres_req_str: 'cpu=192,mem=8192M' },
      4,
      8192 * MIB,
    ],
    ['a TRES count of 0 is no count', { tres_alloc_str: 'cpu=0,mem=0', tres_req_str: 'cpu=2,mem=1G' }, 2, 1024 * MIB],
  ])('%s', (_name, fields, cpus, memory) => {
    const j = job('1', ['PENDING'], fields);
    expect(jobCpuCount(j)).toBe(cpus);
    expect(jobMemoryBytes(j)).toBe(memory);
  });
});

describe('controller job conversion', () => {
  it('2_node_job.json: a job outside any array has array_job_id "0", as slurmctld sends it', () => {
    const j = decoded(v004x.decodeJob(readJson('recorded', 'soperator', '2_node_job.json')));
    expect([
      j.job_id,
      j.name,
      j.state[0],
      j.state_reason,
      j.partition,
      j.user_name,
      j.standard_error,
      j.standard_output,
      j.nodes,
      j.node_count,
    ]).toEqual([
      '349',
      'wrap',
      'COMPLETED',
      'None',
      'main',
      'root',
      '/root/slurm-349.out',
      '/root/slurm-349.out',
      'worker-[1,0]',
      2,
    ]);
    expect(jobInfoLabels(j)).toMatchObject({ array_job_id: '0', array_task_id: '' });
  });

  it('user_name falls back to group_name when slurmctld sends none', () => {
    const wire = {
      job_id: 7,
      job_state: ['RUNNING'],
      group_name: 'research',
      array_job_id: set(0),
      array_task_id: unset,
    };
    expect(decoded(v004x.decodeJob(wire)).user_name).toBe('research');
    expect(decoded(v004x.decodeJob({ ...wire, user_name: 'alice' })).user_name).toBe('alice');
  });

  // Collect_Success: the job sets ArrayTaskID 42 and leaves ArrayJobID nil; its slurm_job_info
  // asserts array_job_id="" and array_task_id="42". Decoded here from the wire, not built as a model.
  it('Collect_Success: array_task_id without array_job_id is still exported', () => {
    const j = decoded(v004x.decodeJob({ job_id: 12345, job_state: ['RUNNING'], array_task_id: set(42) }));
    expect(jobInfoLabels(j)).toMatchObject({ array_job_id: '', array_task_id: '42' });
  });
});

describe('accounting job conversion', () => {
  const times = { submission: 1722697200, start: 1722697230, end: 1722697290 };

  it('complete accounting job', () => {
    const j = decoded(
      v004x.decodeAccountingJob({
        job_id: 54321,
        name: 'accounting_job',
        partition: 'main',
        user: 'testuser',
        nodes: 'worker-[1,2]',
        state: { current: ['RUNNING'], reason: 'None' },
        stderr: '/tmp/stderr',
        stdout: '/tmp/stdout',
        array: { job_id: 54000, task_id: set(7) },
        allocation_nodes: 2,
        required: { CPUs: 8, memory_per_node: set(32768) },
        time: times,
      }),
    );
    expect(j).toMatchObject({
      job_id: '54321',
      name: 'accounting_job',
      state: ['RUNNING'],
      state_reason: 'None',
      partition: 'main',
      user_name: 'testuser',
      standard_error: '/tmp/stderr',
      standard_output: '/tmp/stdout',
      nodes: 'worker-[1,2]',
      node_count: 2,
      array_job_id: '54000',
      array_task_id: '7',
      cpus: 8,
      memory_per_node: 32768,
      submit_time: 1722697200,
      start_time: 1722697230,
      end_time: 1722697290,
    });
  });

  it('user falls back to association user', () => {
    const j = decoded(
      v004x.decodeAccountingJob({
        job_id: 123,
        group: 'group-name',
        association: { user: 'association-user' },
        state: { current: ['RUNNING'] },
        time: times,
      }),
    );
    expect([j.job_id, j.state[0], j.user_name]).toEqual(['123', 'RUNNING', 'association-user']);
  });

  it('pending job: no node count (so no memory), CPUs from required.CPUs when there are no TRES', () => {
    const row = decoded(
      v004x.decodeAccountingJob({
        job_id: 125,
        state: { current: ['PENDING'] },
        allocation_nodes: 0,
        required: { CPUs: 4, memory_per_node: set(8192) },
        time: times,
      }),
    );
    const [j] = adjustAccountingJobs([row], times.submission * 1000);
    expect(j?.node_count).toBeUndefined();
    expect([j?.cpus, j?.memory_per_node]).toEqual([4, 8192]);
    expect(jobCpuCount(j as SlurmJob)).toBe(4);
    expect(jobMemoryBytes(j as SlurmJob)).toBeUndefined();
  });

  it('tres fields', () => {
    const j = decoded(
      v004x.decodeAccountingJob({
        job_id: 124,
        state: { current: ['RUNNING'] },
        time: times,
        tres: {
          allocated: [
            { type: 'cpu', count: 4 },
            { type: 'mem', count: 8192 },
            { type: 'gres', name: 'gpu', count: 2 },
          ],
          requested: [{ type: 'mem', count: 8192 }],
        },
      }),
    );
    expect([j.tres_alloc_str, j.tres_req_str]).toEqual(['cpu=4,mem=8192M,gres/gpu=2', 'mem=8192M']);
  });

  it('a row outside any array has array_job_id "0", as slurmdbd sends it', () => {
    const j = decoded(
      v004x.decodeAccountingJob({
        job_id: 9,
        state: { current: ['COMPLETED'] },
        array: { job_id: 0, task_id: unset, task: '' },
        time: times,
      }),
    );
    expect(jobInfoLabels(j)).toMatchObject({ array_job_id: '0', array_task_id: '' });
  });
});

/** Nodes as slurmrestd v0.0.44 sends them, decoded as the agent decodes a /nodes response. */
function wireNodes(...nodes: Record<string, unknown>[]): SlurmNode[] {
  return nodes.map((n) => decoded(v004x.decodeNode(n)));
}

const T = 1722697230_000;
const [DIAG] = ok(v004x.decodeDiag({ statistics: { server_thread_count: 1 } })) as [SlurmDiag];

describe(`Soperator ${SOPERATOR_COMMIT.slice(0, 8)}: TestMetricsCollector_NodeFails`, () => {
  const maintenance = {
    name: 'node-maintenance',
    instance_id: 'instance-maintenance',
    state: ['IDLE', 'MAINTENANCE'],
    tres: 'cpu=8,mem=64000M,gres/gpu=1',
    address: '10.0.0.3',
  };
  const reserved = {
    name: 'node-reserved',
    instance_id: 'instance-reserved',
    state: ['IDLE', 'RESERVED'],
    tres: 'cpu=8,mem=64000M,gres/gpu=1',
    address: '10.0.0.4',
  };
  const gpuLabels = (name: string, maint: string, resv: string): Labels => ({
    node_name: name,
    state_base: 'IDLE',
    state_is_drain: 'false',
    state_is_maintenance: maint,
    state_is_reserved: resv,
  });

  it('the first collection: node info, and a GPU seconds series (0) for each GPU node in its state', async () => {
    const agent = new Agent();
    const first = await agent.refresh(
      snapshot({ atMs: T, seq: 1, nodes: wireNodes(maintenance, reserved), jobs: [], diag: DIAG }),
    );
    await agent.shutdown();
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
    expectSeries(first, 'COUNTER', 'slurm_node_gpu_seconds_total', gpuLabels('node-maintenance', 'true', 'false'), 0);
    expectSeries(first, 'COUNTER', 'slurm_node_gpu_seconds_total', gpuLabels('node-reserved', 'false', 'true'), 0);
  });

  it('then the node in maintenance drains: one fail with its reason, and node info with it', async () => {
    const agent = new Agent();
    await agent.refresh(snapshot({ atMs: T, seq: 1, nodes: wireNodes(maintenance, reserved), jobs: [], diag: DIAG }));
    const drained = {
      ...maintenance,
      state: ['IDLE', 'MAINTENANCE', 'DRAIN'],
      reason: 'maintenance drain triggered',
      reason_changed_at: { set: true, infinite: false, number: T / 1000 + 5 },
    };
    const second = await agent.refresh(snapshot({ atMs: T + 10_000, seq: 2, nodes: wireNodes(drained, reserved) }));
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
    // The interval is counted in the state it started in; the drained state has its series from now on.
    expectSeries(second, 'COUNTER', 'slurm_node_gpu_seconds_total', gpuLabels('node-maintenance', 'true', 'false'), 10);
    expectSeries(
      second,
      'COUNTER',
      'slurm_node_gpu_seconds_total',
      { ...gpuLabels('node-maintenance', 'true', 'false'), state_is_drain: 'true' },
      0,
    );
  });
});

describe(`Soperator ${SOPERATOR_COMMIT.slice(0, 8)}: TestMetricsCollector_NodeTopologyMetrics`, () => {
  const testNode = (name: string) => ({
    name,
    instance_id: `${name}-instance`,
    state: ['IDLE'],
    tres: 'cpu=4,mem=8000M,gres/gpu=1',
    address: '10.0.0.1',
  });
  const topology: ReadonlyMap<string, NodeTopology> = new Map([
    ['worker-0', { nodesetName: 'gpu-workers', nvlinkInstanceGroup: 'nvlig-1' }],
  ]);

  it('worker-0 with a NodeSet and an NVLink group; worker-without-topology with neither', async () => {
    const nodes = wireNodes(testNode('worker-0'), testNode('worker-without-topology'));
    const jobs = [decoded(v004x.decodeJob({ job_id: 123, job_state: ['RUNNING'], nodes: 'worker-0' }))];
    const agent = new Agent();
    const all = await agent.refresh({
      ...snapshot({ atMs: T, seq: 1, nodes, jobs }),
      topology: { value: topology, atMs: T, seq: 1 },
    });
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
    const info = all.filter((s) => s.name === 'slurm_node_info');
    expectSomeWith(info, { node_name: 'worker-0', nodeset_name: 'gpu-workers' });
    expectSomeWith(info, { node_name: 'worker-without-topology', nodeset_name: '' });
    // Only a node whose group is known has the mapping series.
    expect(all.filter((s) => s.name === 'slurm_node_nvlink_instance_group').map((s) => s.labels.node_name)).toEqual([
      'worker-0',
    ]);
  });

  it("slurm_node_info declares nodeset_name third, as Soperator's Describe lists its labels", () => {
    expect(CLUSTER_METRICS.nodeInfo.attributes.join(',')).toBe(
      'node_name,instance_id,nodeset_name,state_base,state_is_drain,state_is_maintenance,state_is_reserved,state_is_completing,state_is_fail,state_is_planned,state_is_not_responding,state_is_invalid,state_is_cloud,state_is_power_down,state_is_power_drain,state_is_powered_down,state_is_powering_down,state_is_powering_up,state_is_power_up,is_unavailable,reservation_name,address,reason,comment',
    );
  });
});
