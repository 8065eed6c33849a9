/** Snapshot → families, on decoded fixtures of every API family, with exact label sets. */
import { describe, expect, it } from 'vitest';
import * as v0038 from '../../../src/cluster/api/decode/decode-v0038.js';
import * as v004x from '../../../src/cluster/api/decode/decode-v004x.js';
import { CLUSTER_METRICS, EXTRA_SPECS, NATIVE_SPECS } from '../../../src/cluster/metrics.js';
import type { SlurmDiag, SlurmJob } from '../../../src/cluster/model.js';
import { adjustAccountingJobs } from '../../../src/cluster/adjust-accounting.js';
import { observe, observeState } from '../../../src/cluster/observe.js';
import { jobDurationSeconds, trimReservation } from '../../../src/cluster/observe/soperator.js';
import { advance, INITIAL_CLUSTER_STATE } from '../../../src/cluster/state.js';
import type { AnyFamily } from '../../../src/telemetry/spec.js';
import { built, readJson, recorded } from '../fixtures.js';
import { fam, job, node, ok, points, snapshot, T0, valuesBy } from './helpers.js';

const MIB = 1024 * 1024;
const NO_NEW_FLAGS = {
  state_is_completing: '',
  state_is_fail: '',
  state_is_planned: '',
  state_is_not_responding: '',
  state_is_invalid: '',
  state_is_cloud: '',
  state_is_power_down: '',
  state_is_power_drain: '',
  state_is_powered_down: '',
  state_is_powering_down: '',
  state_is_powering_up: '',
  state_is_power_up: '',
};

function pointOf(families: readonly AnyFamily[], name: string, match: Record<string, string>): Record<string, string> {
  const f = fam(families, name);
  const hits = f.points.filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v));
  expect(hits, `${name} ${JSON.stringify(match)}`).toHaveLength(1);
  return { ...(hits[0]?.attributes ?? {}) };
}

const pairs = (families: readonly AnyFamily[], name: string, a: string, b: string) =>
  fam(families, name)
    .points.map((p) => `${p.attributes[a]}@${p.attributes[b]}`)
    .sort();

describe('v0.0.38 recorded (Slurm 22.05)', () => {
  const nodes = ok(v0038.decodeNodes(recorded('v0.0.38', '02-drain-node2-nodes.json')));
  const jobs = ok(v0038.decodeJobs(recorded('v0.0.38', '01-jobs-jobs.json')));
  const diag = ok(v0038.decodeDiag(recorded('v0.0.38', '01-jobs-diag.json')))[0] as SlurmDiag;
  const now = 1796021500 * 1000;
  const out = observe(snapshot({ atMs: now, seq: 1, nodes, jobs, diag }), now);

  it('node2 (MIXED+DRAIN) has the exact slurm_node_info labels', () => {
    expect(pointOf(out, 'slurm_node_info', { node_name: 'node2' })).toEqual({
      node_name: 'node2',
      instance_id: '',
      nodeset_name: '',
      state_base: 'MIXED',
      state_is_drain: 'true',
      state_is_maintenance: 'false',
      state_is_reserved: 'false',
      ...NO_NEW_FLAGS,
      is_unavailable: '',
      reservation_name: '',
      address: '127.0.0.1',
      reason: 'bad hca',
      comment: '',
    });
  });

  it('node resources in CPUs and bytes; no effective CPUs where the API has none', () => {
    expect(valuesBy(out, 'slurm_node_cpus_total', 'node_name')).toEqual({ node1: 4, node2: 4, node3: 4, node4: 4 });
    expect(valuesBy(out, 'slurm_node_cpus_allocated', 'node_name')['node2']).toBe(3);
    expect(valuesBy(out, 'slurm_node_cpus_idle', 'node_name')['node2']).toBe(1);
    expect(fam(out, 'slurm_node_cpus_effective').points).toEqual([]);
    expect(valuesBy(out, 'slurm_node_memory_total_bytes', 'node_name')['node2']).toBe(8000 * MIB);
    expect(valuesBy(out, 'slurm_node_memory_allocated_bytes', 'node_name')['node2']).toBe(300 * MIB);
    expect(valuesBy(out, 'slurm_node_memory_free_bytes', 'node_name')['node2']).toBe(23664 * MIB);
    expect(valuesBy(out, 'slurm_node_memory_effective_bytes', 'node_name')['node2']).toBe(8000 * MIB);
    expect(pairs(out, 'slurm_node_partition', 'node_name', 'partition')).toEqual([
      'node1@cpu',
      'node2@cpu',
      'node3@gpu',
      'node4@gpu',
    ]);
  });

  it('job 15 (running GPU job) has the exact slurm_job_info labels', () => {
    expect(pointOf(out, 'slurm_job_info', { job_id: '15' })).toEqual({
      job_id: '15',
      job_state: 'RUNNING',
      job_state_reason: 'None',
      slurm_partition: 'gpu',
      job_name: 'gpu-one',
      user_name: 'root',
      user_mail: '',
      user_id: '0',
      standard_error: '/dev/null',
      standard_output: '/dev/null',
      array_job_id: '0',
      array_task_id: '',
      submit_time: '1796021441',
      start_time: '1796021444',
      end_time: '1827557444',
      finished_time: '',
    });
  });

  it('array identities, finished_time only for terminal jobs, empty times when unset', () => {
    expect(pointOf(out, 'slurm_job_info', { job_id: '11' })).toMatchObject({ array_job_id: '6', array_task_id: '1' });
    expect(pointOf(out, 'slurm_job_info', { job_id: '6' })).toMatchObject({
      array_job_id: '6',
      array_task_id: '4-7%4',
      start_time: '',
      end_time: '',
    });
    expect(pointOf(out, 'slurm_job_info', { job_id: '1' })).toMatchObject({
      job_state: 'COMPLETED',
      end_time: '1796021439',
      finished_time: '1796021439',
    });
    expect(pointOf(out, 'slurm_job_info', { job_id: '4' })).toMatchObject({
      job_state: 'RUNNING',
      end_time: '1827557441',
      finished_time: '',
    });
  });

  it('durations: running to now, terminal end − start, none for pending jobs with a forecast start', () => {
    const d = valuesBy(out, 'slurm_job_duration_seconds', 'job_id');
    expect(d['15']).toBe(1796021500 - 1796021444);
    expect(d['1']).toBe(1);
    expect(d['3']).toBe(0);
    expect(d['14']).toBeUndefined();
    expect(d['7']).toBeUndefined();
  });

  it('CPUs, memory and GPUs per job, requested TRES standing in while pending', () => {
    expect(valuesBy(out, 'slurm_job_cpus', 'job_id')).toMatchObject({ 4: 2, 7: 8, 15: 1 });
    expect(valuesBy(out, 'slurm_job_memory_bytes', 'job_id')).toMatchObject({ 4: 1000 * MIB, 7: 8000 * MIB });
    expect(valuesBy(out, 'slurm_job_gpus', 'job_id')).toEqual({ 15: 1, 16: 2 });
  });

  it('maps jobs to the nodes they run on', () => {
    const map = pairs(out, 'slurm_node_job', 'job_id', 'node_name');
    expect(map).toContain('15@node3');
    expect(map).toContain('16@node4');
    expect(map.filter((x) => x.startsWith('7@'))).toEqual([]);
  });
});

describe('Soperator testdata (v0.0.41 node and job, v0.0.44 diag)', () => {
  const n = v004x.decodeNode(readJson('recorded', 'soperator', 'usual_node_rest.json'));
  const j = v004x.decodeJob(readJson('recorded', 'soperator', '2_node_job.json'));
  if (!n.ok || !j.ok) throw new Error('soperator fixtures did not decode');
  const now = 1749570000 * 1000;
  const out = observe(snapshot({ atMs: now, seq: 1, nodes: [n.item], jobs: [j.item] }), now);

  it('worker-1 node labels and resources', () => {
    expect(pointOf(out, 'slurm_node_info', { node_name: 'worker-1' })).toEqual({
      node_name: 'worker-1',
      instance_id: 'computeinstance-xxxxxxxxxxxxx',
      nodeset_name: '',
      state_base: 'IDLE',
      state_is_drain: 'false',
      state_is_maintenance: 'false',
      state_is_reserved: 'false',
      ...NO_NEW_FLAGS,
      is_unavailable: '',
      reservation_name: '',
      address: '10.0.0.1',
      reason: '',
      comment: 'comment',
    });
    expect(valuesBy(out, 'slurm_node_cpus_effective', 'node_name')).toEqual({ 'worker-1': 16 });
    expect(valuesBy(out, 'slurm_node_memory_effective_bytes', 'node_name')).toEqual({ 'worker-1': 191356 * MIB });
    expect(valuesBy(out, 'slurm_node_memory_free_bytes', 'node_name')).toEqual({ 'worker-1': 168840 * MIB });
  });

  it('leaves instance_id empty when the node does not carry it', () => {
    const { instance_id: _dropped, ...withoutId } = n.item;
    const o = observe(snapshot({ atMs: now, seq: 1, nodes: [withoutId] }), now);
    expect(pointOf(o, 'slurm_node_info', { node_name: 'worker-1' })['instance_id']).toBe('');
  });

  it('job 349: hostlist worker-[1,0] expanded in order, allocated TRES, completed duration', () => {
    expect(fam(out, 'slurm_node_job').points.map((p) => p.attributes['node_name'])).toEqual(['worker-1', 'worker-0']);
    expect(valuesBy(out, 'slurm_job_cpus', 'job_id')).toEqual({ 349: 4 });
    expect(valuesBy(out, 'slurm_job_memory_bytes', 'job_id')).toEqual({ 349: 382712 * MIB });
    expect(valuesBy(out, 'slurm_job_duration_seconds', 'job_id')).toEqual({ 349: 6 });
    expect(fam(out, 'slurm_job_gpus').points).toEqual([]);
    expect(pointOf(out, 'slurm_job_info', { job_id: '349' })).toMatchObject({
      user_name: 'root',
      user_mail: '',
      user_id: '0',
      standard_output: '/root/slurm-349.out',
      finished_time: '1749564041',
    });
  });

  it('diag: RPC counters in calls and seconds (from µs), starting at the statistics reset', () => {
    const diag = ok(v004x.decodeDiag(readJson('recorded', 'soperator', 'sdiag_rest.json')))[0] as SlurmDiag;
    const o = observe(snapshot({ atMs: now, seq: 1, diag }), now);
    const calls = points(o, 'slurm_controller_rpc_calls');
    expect(calls.map((p) => [p.attributes['message_type'], p.value, p.startTimeMs])).toEqual([
      ['REQUEST_NODE_INFO', 205430, 1747660800000],
      ['REQUEST_JOB_INFO', 102715, 1747660800000],
    ]);
    expect(valuesBy(o, 'slurm_controller_rpc_duration_seconds', 'message_type')).toEqual({
      REQUEST_NODE_INFO: 6871.947674,
      REQUEST_JOB_INFO: 0.512238,
    });
    expect(points(o, 'slurm_controller_rpc_user_calls').map((p) => [p.attributes, p.value])).toEqual([
      [{ user: 'root', user_id: '0' }, 308145],
    ]);
    expect(points(o, 'slurm_controller_rpc_user_duration_seconds')[0]?.value).toBeCloseTo(7384.185912, 6);
    expect(fam(o, 'slurm_controller_server_thread_count').points).toEqual([{ attributes: {}, value: 3 }]);
    expect(o.map((f) => f.spec.name).filter((x) => x.startsWith('slurm_node') || x.startsWith('slurm_job'))).toEqual(
      [],
    );
  });
});

describe.each(['v0.0.44', 'v0.0.45'] as const)('%s built', (version) => {
  const nodes = ok(v004x.decodeNodes(built(version, 'nodes.json')));
  const jobs = ok(v004x.decodeJobs(built(version, 'jobs.json')));
  const now = 1764000000 * 1000;
  const out = observe(snapshot({ atMs: now, seq: 1, nodes, jobs }), now);

  it('gpu-001 (IDLE+DRAIN, health check) is unavailable, with reason and comment', () => {
    expect(pointOf(out, 'slurm_node_info', { node_name: 'gpu-001' })).toEqual({
      node_name: 'gpu-001',
      instance_id: '',
      nodeset_name: '',
      state_base: 'IDLE',
      state_is_drain: 'true',
      state_is_maintenance: 'false',
      state_is_reserved: 'false',
      ...NO_NEW_FLAGS,
      is_unavailable: 'true',
      reservation_name: '',
      address: '10.20.1.1',
      reason: 'GPU health check failed: XID 79',
      comment: 'nvidia-smi: GPU 3 has fallen off the bus',
    });
    expect(valuesBy(out, 'slurm_node_cpus_effective', 'node_name')['gpu-001']).toBe(126);
    expect(valuesBy(out, 'slurm_node_memory_effective_bytes', 'node_name')['gpu-001']).toBe((1031000 - 8192) * MIB);
  });

  it('flags of the other nodes', () => {
    expect(pointOf(out, 'slurm_node_info', { node_name: 'gpu-003' })).toMatchObject({
      state_base: 'DOWN',
      state_is_not_responding: 'true',
      is_unavailable: 'true',
      reason: 'Not responding',
    });
    expect(pointOf(out, 'slurm_node_info', { node_name: 'cloud-001' })).toMatchObject({
      state_base: 'IDLE',
      state_is_cloud: 'true',
      state_is_powered_down: 'true',
      is_unavailable: '',
      address: 'cloud-001',
    });
    expect(pointOf(out, 'slurm_node_info', { node_name: 'cloud-002' })).toMatchObject({
      state_is_powering_up: 'true',
      state_is_powered_down: '',
    });
    expect(pointOf(out, 'slurm_node_info', { node_name: 'cpu-002' })).toMatchObject({
      state_is_maintenance: 'true',
      state_is_reserved: 'true',
      state_is_drain: 'false',
      reservation_name: 'maint-2025-11-25',
    });
    expect(pointOf(out, 'slurm_node_info', { node_name: 'cpu-003' })).toMatchObject({
      state_base: 'IDLE',
      is_unavailable: '',
      ...NO_NEW_FLAGS,
    });
    expect(pairs(out, 'slurm_node_partition', 'node_name', 'partition').filter((x) => x.startsWith('cpu-001'))).toEqual(
      ['cpu-001@cpu', 'cpu-001@debug'],
    );
  });

  it('job 2001: user_mail only because it differs from the user name; two nodes; 8 GPUs', () => {
    expect(pointOf(out, 'slurm_job_info', { job_id: '2001' })).toMatchObject({
      user_name: 'alice',
      user_mail: 'alice@example.org',
      end_time: '1764079200',
      finished_time: '',
    });
    expect(pointOf(out, 'slurm_job_info', { job_id: '2005' })).toMatchObject({
      user_name: 'bob',
      user_mail: '',
      array_job_id: '2002',
      array_task_id: '3',
    });
    expect(pairs(out, 'slurm_node_job', 'job_id', 'node_name').filter((x) => x.startsWith('2001@'))).toEqual([
      '2001@gpu-002',
      '2001@gpu-004',
    ]);
    expect(valuesBy(out, 'slurm_job_gpus', 'job_id')).toEqual({ 2001: 8, 1990: 1 });
    expect(valuesBy(out, 'slurm_job_duration_seconds', 'job_id')['2001']).toBe(1764000000 - 1763992800);
  });

  it('job_state is the first word; pending array master keeps its range; pending plans are not GPUs', () => {
    expect(pointOf(out, 'slurm_job_info', { job_id: '2030' })['job_state']).toBe('PENDING');
    expect(pointOf(out, 'slurm_job_info', { job_id: '2002' })).toMatchObject({
      array_job_id: '2002',
      array_task_id: '4-7%2',
      job_state_reason: 'JobArrayTaskLimit',
    });
    expect(valuesBy(out, 'slurm_job_gpus', 'job_id')['1985']).toBeUndefined();
    expect(valuesBy(out, 'slurm_job_cpus', 'job_id')['2020']).toBe(256);
    expect(valuesBy(out, 'slurm_job_memory_bytes', 'job_id')['2020']).toBe(2000000 * MIB);
  });

  it('accounting rows, once adjusted, agree with the controller on the labels dashboards join on', () => {
    const acct = adjustAccountingJobs(ok(v004x.decodeAccountingJobs(built(version, 'slurmdb-jobs.json'))), now);
    const a = observe(snapshot({ atMs: now, seq: 1, jobs: acct }), now);
    // slurmdbd stores end 0 for the running job; projected as start + 1440 min, as slurmctld reports it.
    expect(pointOf(a, 'slurm_job_info', { job_id: '2001' })['end_time']).toBe(
      pointOf(out, 'slurm_job_info', { job_id: '2001' })['end_time'],
    );
    expect(pointOf(a, 'slurm_job_info', { job_id: '2010' })['end_time']).toBe('');
    expect(pointOf(a, 'slurm_job_info', { job_id: '2001' })['user_id']).toBe('');
    // "None assigned" and "(null)" give no node edges.
    expect(pairs(a, 'slurm_node_job', 'job_id', 'node_name').filter((x) => /^20(02|20)@/.test(x))).toEqual([]);
    expect(valuesBy(a, 'slurm_job_cpus', 'job_id')['2002']).toBe(8);
    expect(valuesBy(a, 'slurm_job_memory_bytes', 'job_id')['2002']).toBe(32768 * MIB);
    expect(valuesBy(a, 'slurm_job_gpus', 'job_id')['2001']).toBe(8);
  });
});

describe('snapshot coverage', () => {
  const n = node('n1', ['IDLE'], { cpus: 4 });
  const j = job('1', ['RUNNING'], { start_time: T0 / 1000 - 10, nodes: 'n1' });

  it('skips the families of a sub-collector that has no data yet', () => {
    const onlyNodes = observe(snapshot({ atMs: T0, seq: 1, nodes: [n] }), T0).map((f) => f.spec.name);
    const onlyJobs = observe(snapshot({ atMs: T0, seq: 1, jobs: [j] }), T0).map((f) => f.spec.name);
    expect(onlyNodes).toContain('slurm_node_info');
    expect(
      onlyNodes.some((x) => x.startsWith('slurm_job') || x.startsWith('slurm_controller') || x === 'slurm_node_job'),
    ).toBe(false);
    expect(onlyJobs).toContain('slurm_job_info');
    expect(onlyJobs).toContain('slurm_node_job');
    expect(onlyJobs.some((x) => x === 'slurm_node_info' || x.startsWith('slurm_node_cpus'))).toBe(false);
    expect(observe({ atMs: T0 }, T0)).toEqual([]);
  });

  it("with every sub-collector, emits each snapshot family once (with the state's) and no event family", () => {
    const snap = snapshot({
      atMs: T0,
      seq: 1,
      nodes: [n],
      jobs: [j],
      diag: { rpcs_by_message_type: [], rpcs_by_user: [] },
    });
    const names = [...observe(snap, T0), ...observeState(advance(INITIAL_CLUSTER_STATE, snap).state)].map(
      (f) => f.spec.name,
    );
    expect(new Set(names).size).toBe(names.length);
    const native = new Set([...NATIVE_SPECS, ...EXTRA_SPECS].map((s) => s.name));
    expect(names.filter((name) => !native.has(name)).sort()).toEqual(
      Object.values(CLUSTER_METRICS)
        .map((s) => s.name)
        .sort(),
    );
  });

  it('an empty node list is data: families present, without points', () => {
    const out = observe(snapshot({ atMs: T0, seq: 1, nodes: [] }), T0);
    expect(fam(out, 'slurm_node_info').points).toEqual([]);
  });

  it('a malformed hostlist gives no node edges but keeps the job', () => {
    const bad = job('2', ['RUNNING'], { nodes: 'n[3-1]' });
    const out = observe(snapshot({ atMs: T0, seq: 1, jobs: [bad] }), T0);
    expect(fam(out, 'slurm_node_job').points).toEqual([]);
    expect(fam(out, 'slurm_job_info').points).toHaveLength(1);
  });

  it('hostlists keep zero padding', () => {
    const out = observe(snapshot({ atMs: T0, seq: 1, jobs: [job('3', ['RUNNING'], { nodes: 'a[08-10],b5' })] }), T0);
    expect(fam(out, 'slurm_node_job').points.map((p) => p.attributes['node_name'])).toEqual([
      'a08',
      'a09',
      'a10',
      'b5',
    ]);
  });

  it('reservation names are trimmed to 50 characters, by code point', () => {
    const long = 'r'.repeat(49) + '€€€';
    expect(trimReservation(long)).toBe('r'.repeat(49) + '€');
    expect(trimReservation('short')).toBe('short');
    expect(trimReservation(undefined)).toBe('');
    const out = observe(
      snapshot({ atMs: T0, seq: 1, nodes: [node('n1', ['IDLE'], { reservation: 'x'.repeat(80) })] }),
      T0,
    );
    expect(pointOf(out, 'slurm_node_info', { node_name: 'n1' })['reservation_name']).toBe('x'.repeat(50));
  });
});

describe('job durations', () => {
  const now = T0;
  const s = T0 / 1000;
  it.each<[string, SlurmJob, number | undefined]>([
    ['running: now − start', job('1', ['RUNNING'], { start_time: s - 90, end_time: s + 3600 }), 90],
    ['completing flag on a running job', job('1', ['RUNNING', 'COMPLETING'], { start_time: s - 5 }), 5],
    ['suspended counts as not terminal', job('1', ['SUSPENDED'], { start_time: s - 50 }), 50],
    ['completed: end − start', job('1', ['COMPLETED'], { start_time: s - 500, end_time: s - 100 }), 400],
    ['timeout: end − start', job('1', ['TIMEOUT'], { start_time: s - 500, end_time: s - 200 }), 300],
    ['terminal without end', job('1', ['CANCELLED'], { start_time: s - 500 }), undefined],
    ['terminal with end before start', job('1', ['FAILED'], { start_time: s - 10, end_time: s - 20 }), undefined],
    ['never started', job('1', ['CANCELLED'], { end_time: s - 20 }), undefined],
    ['pending with a forecast start in the past', job('1', ['PENDING'], { start_time: s - 20 }), undefined],
    ['running with a start ahead of our clock', job('1', ['RUNNING'], { start_time: s + 20 }), undefined],
  ])('%s', (_, j, expected) => {
    expect(jobDurationSeconds(j, now)).toBe(expected);
  });
});
