/**
 * The v0.0.39–v0.0.45 decoders on the built fixtures (one scenario rendered in every version's
 * shape) and on Soperator's recorded v0.0.41/v0.0.44 data.
 */
import { describe, expect, it } from 'vitest';
import * as v004x from '../../../../src/cluster/api/decode/decode-v004x.js';
import { expandHostlist } from '../../../../src/cluster/hostlist.js';
import type { Decoded, SlurmDiag, SlurmJob, SlurmNode } from '../../../../src/cluster/model.js';
import { jobBaseState, JOB_TERMINAL_STATES } from '../../../../src/cluster/model.js';
import { jobCpuCount, jobMemoryBytes, parseTres } from '../../../../src/cluster/tres.js';
import { BUILT_VERSIONS, built, readJson } from '../../fixtures.js';

function items<T>(d: Decoded<T>): readonly T[] {
  if (!d.ok) throw new Error(`decode failed: ${d.message}`);
  expect(d.skipped).toBe(0);
  return d.items;
}

const find = <T extends { name?: string; job_id?: string }>(list: readonly T[], key: string): T => {
  const hit = list.find((x) => x.name === key || x.job_id === key);
  if (hit === undefined) throw new Error(`${key} not found`);
  return hit;
};

describe.each(BUILT_VERSIONS)('%s built fixtures', (version) => {
  const nodes = items(v004x.decodeNodes(built(version, 'nodes.json')));
  const jobs = items(v004x.decodeJobs(built(version, 'jobs.json')));
  const acct = items(v004x.decodeAccountingJobs(built(version, 'slurmdb-jobs.json')));
  const diag = items(v004x.decodeDiag(built(version, 'diag.json')))[0] as SlurmDiag;

  it('reads meta', () => {
    const d = v004x.decodeNodes(built(version, 'nodes.json'));
    expect(d.ok && d.meta.data_parser).toBe(`data_parser/${version}`);
    expect(d.ok && d.meta.slurm_release).toMatch(/^\d\d\.\d\d\.\d+$/);
    expect(d.ok && d.meta.cluster).toBe('gpu-lab');
  });

  it('splits node state arrays into base and flags', () => {
    expect(find(nodes, 'gpu-001').state).toEqual({ base: 'IDLE', flags: ['DRAIN'] });
    expect(find(nodes, 'gpu-002').state).toEqual({ base: 'MIXED', flags: [] });
    expect(find(nodes, 'gpu-003').state).toEqual({ base: 'DOWN', flags: ['NOT_RESPONDING'] });
    expect(find(nodes, 'gpu-004').state).toEqual({ base: 'MIXED', flags: ['DRAIN'] });
    expect(find(nodes, 'cloud-001').state).toEqual({ base: 'IDLE', flags: ['CLOUD', 'POWERED_DOWN'] });
    expect(find(nodes, 'cpu-002').state).toEqual({ base: 'IDLE', flags: ['RESERVED', 'MAINTENANCE'] });
  });

  it('reads node resources, leaving NO_VAL ones undefined', () => {
    const n = find(nodes, 'gpu-002');
    expect([n.cpus, n.alloc_cpus, n.alloc_idle_cpus, n.effective_cpus]).toEqual([128, 64, 64, 126]);
    expect([n.specialized_cpus, n.specialized_cpus_count, n.specialized_memory]).toEqual(['0-1', 2, 8192]);
    expect([n.real_memory, n.alloc_memory, n.free_mem]).toEqual([1031000, 512000, 950112]);
    expect(parseTres(n.tres).gpus).toBe(8);
    expect(parseTres(n.tres_used).gpus).toBe(4);
    expect(n.partitions).toEqual(['gpu']);
    expect(n.boot_time).toBeGreaterThan(1.7e9);
    expect(find(nodes, 'gpu-003').free_mem).toBeUndefined();
    const cloud = find(nodes, 'cloud-001');
    expect([cloud.boot_time, cloud.slurmd_start_time, cloud.free_mem, cloud.tres_used]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('reads node reason, comment and reservation', () => {
    const n = find(nodes, 'gpu-001');
    expect(n.reason).toBe('GPU health check failed: XID 79');
    expect(n.reason_set_by_user).toBe('root');
    expect(n.comment).toContain('fallen off the bus');
    expect(find(nodes, 'cpu-002').reservation).toBe('maint-2025-11-25');
    expect(find(nodes, 'gpu-002').reason).toBeUndefined();
  });

  it('reads a running multi-node GPU job', () => {
    const j = find(jobs, '2001');
    expect(j.source).toBe('controller');
    expect(j.state).toEqual(['RUNNING']);
    expect(expandHostlist(j.nodes)).toEqual(['gpu-002', 'gpu-004']);
    expect([j.cpus, j.node_count, j.memory_per_node, j.memory_per_cpu]).toEqual([128, 2, 512000, undefined]);
    expect([j.user_name, j.user_id, j.mail_user]).toEqual(['alice', 1001, 'alice@example.org']);
    expect(j.time_limit).toBe(1440);
    expect((j.end_time as number) - (j.start_time as number)).toBe(1440 * 60);
    expect(parseTres(j.tres_alloc_str)).toMatchObject({ cpus: 128, gpus: 8, nodes: 2, memory_bytes: 1000 * 1024 ** 3 });
    expect(j.array_job_id).toBe('0');
    expect(j.array_task_id).toBeUndefined();
  });

  it('keeps a pending array master apart from its running task', () => {
    const master = find(jobs, '2002');
    expect([master.array_job_id, master.array_task_id, master.state_reason]).toEqual([
      '2002',
      '4-7%2',
      'JobArrayTaskLimit',
    ]);
    expect([master.start_time, master.end_time, master.nodes, master.tres_alloc_str]).toEqual([
      undefined,
      undefined,
      '',
      undefined,
    ]);
    expect(jobCpuCount(master)).toBe(8);
    const task = find(jobs, '2005');
    expect([task.array_job_id, task.array_task_id]).toEqual(['2002', '3']);
  });

  it('tells an unlimited time limit from an unset one', () => {
    const j = find(jobs, '2010');
    expect(j.time_limit).toBeUndefined();
    expect(j.time_limit_unlimited).toBe(true);
    expect(find(jobs, '2001').time_limit_unlimited).toBeUndefined();
  });

  it('reads verbose exit codes', () => {
    expect(find(jobs, '1990').exit_code).toEqual({ status: ['SUCCESS'], return_code: 0 });
    expect(find(jobs, '1991').exit_code).toEqual({ status: ['ERROR'], return_code: 3 });
    expect(find(jobs, '1992').exit_code).toEqual({ status: ['SIGNALED'], signal: 15, signal_name: 'SIGTERM' });
    for (const j of jobs)
      expect(JOB_TERMINAL_STATES.has(jobBaseState(j))).toBe(['1990', '1991', '1992'].includes(j.job_id));
  });

  it('keeps the old TRES of a requeued job and its restart count', () => {
    const j = find(jobs, '1985');
    expect(j.state).toEqual(['PENDING']);
    expect(j.restart_cnt).toBe(1);
    expect(parseTres(j.tres_alloc_str).gpus).toBe(4);
  });

  it('falls back to memory_per_node × node_count without TRES memory', () => {
    const j = find(jobs, '2020');
    expect(jobMemoryBytes({ ...j, tres_req_str: undefined, tres_alloc_str: undefined })).toBe(
      1000000 * 2 * 1024 * 1024,
    );
    expect(jobMemoryBytes(j)).toBe(2000000 * 1024 * 1024);
  });

  it('reads slurmdbd records', () => {
    const run = find(acct, '2001');
    expect(run.source).toBe('accounting');
    expect([run.state, run.user_name, run.user_id, run.end_time]).toEqual([['RUNNING'], 'alice', undefined, undefined]);
    expect(run.tres_alloc_str).toBe('cpu=128,mem=1024000M,energy=0,node=2,billing=128,gres/gpu=8,gres/gpu:h100=8');
    expect(run.node_count).toBe(2);
    const master = find(acct, '2002');
    expect([master.array_job_id, master.array_task_id, master.nodes, master.tres_alloc_str]).toEqual([
      '2002',
      '4-7',
      '',
      undefined,
    ]);
    expect(parseTres(master.tres_req_str).cpus).toBe(8);
    expect(find(acct, '2005').array_task_id).toBe('3');
    expect(find(acct, '2010').time_limit_unlimited).toBe(true);
    expect(find(acct, '2020').nodes).toBe('');
    expect(find(acct, '1991').exit_code).toEqual({ status: ['ERROR'], return_code: 3 });
  });

  it('agrees with the controller on the jobs both report', () => {
    for (const a of acct) {
      const c = find(jobs, a.job_id);
      expect([a.name, a.partition, a.state[0], a.array_job_id, a.array_task_id?.replace(/%.*$/, '')], a.job_id).toEqual(
        [c.name, c.partition, c.state[0], c.array_job_id, c.array_task_id?.replace(/%.*$/, '')],
      );
      expect(a.submit_time).toBe(c.submit_time);
      expect(a.time_limit).toBe(c.time_limit);
      expect(jobCpuCount(a)).toBe(jobCpuCount(c));
      expect(jobMemoryBytes(a)).toBe(jobMemoryBytes(c));
      expect(parseTres(a.tres_alloc_str).gpus).toBe(parseTres(c.tres_alloc_str).gpus);
    }
  });

  it('reads diag counters and RPC tables', () => {
    expect(diag.server_thread_count).toBe(3);
    expect(diag.rpcs_by_message_type).toHaveLength(7);
    const nodeInfo = diag.rpcs_by_message_type.find((r) => r.message_type === 'REQUEST_NODE_INFO');
    expect(nodeInfo).toMatchObject({ type_id: 2007, count: 205430, total_time_us: 6871947674, average_time_us: 33451 });
    expect(diag.rpcs_by_user.find((u) => u.user === 'root')).toMatchObject({
      user_id: 0,
      count: 308145,
      total_time_us: 7384185912,
    });
    expect(diag.req_time).toBe(1764000000);
    expect(diag.bf_active).toBe(false);
  });

  it('fails the errors-only response with the errors attached', () => {
    const d = v004x.decodeJobs(built(version, 'jobs-error.json'));
    expect(d.ok).toBe(false);
    if (!d.ok) {
      expect(d.kind).toBe('api_errors');
      expect(d.message).toContain('Protocol authentication error');
      expect(d.errors[0]?.error_number).toBe(1007);
      expect(d.meta.data_parser).toBe(`data_parser/${version}`);
    }
  });
});

describe('differences between versions', () => {
  const decodeAll = <T>(file: string, fn: (b: unknown) => Decoded<T>) =>
    BUILT_VERSIONS.map((v) => items(fn(built(v, file))));

  it('decodes the same scenario to the same model in every version', () => {
    // slurmd_version is the one value that differs: each version's fixture runs its own release.
    const withoutVersion = ({ slurmd_version: _, ...rest }: SlurmNode) => rest;
    const nodesByVersion = decodeAll('nodes.json', v004x.decodeNodes).map((ns) =>
      ns.filter((n) => !['cpu-004', 'cloud-003'].includes(n.name)).map(withoutVersion),
    );
    for (const ns of nodesByVersion) expect(ns).toEqual(nodesByVersion[0]);
    const jobsByVersion = decodeAll('jobs.json', v004x.decodeJobs).map((js) => js.filter((j) => j.job_id !== '2030'));
    for (const js of jobsByVersion) expect(js).toEqual(jobsByVersion[0]);
  });

  it('keeps flags that only newer releases send', () => {
    const n44 = items(v004x.decodeNodes(built('v0.0.44', 'nodes.json')));
    expect(find(n44, 'cpu-004').state).toEqual({ base: 'IDLE', flags: ['BLOCKED'] });
    const n45 = items(v004x.decodeNodes(built('v0.0.45', 'nodes.json')));
    expect(find(n45, 'cloud-003').state).toEqual({ base: 'IDLE', flags: ['CLOUD', 'POWER_DOWN', 'POWER_DOWN_ASAP'] });
    const j44 = items(v004x.decodeJobs(built('v0.0.44', 'jobs.json')));
    expect(find(j44, '2030').state).toEqual(['PENDING', 'EXPEDITING']);
  });

  it('reads schedule_cycle_sum where the version has it, above 2^32 from v0.0.44', () => {
    const sums = BUILT_VERSIONS.map((v) => items(v004x.decodeDiag(built(v, 'diag.json')))[0]?.schedule_cycle_sum);
    expect(sums[0]).toBeUndefined();
    expect(sums.slice(1, 4).every((s) => s !== undefined && s < 2 ** 32)).toBe(true);
    expect(sums[4]).toBe(6442450944);
    expect(sums[5]).toBe(6442450944);
  });

  it('reads stdout/stderr from slurmdbd only from v0.0.41', () => {
    const out = BUILT_VERSIONS.map(
      (v) => find(items(v004x.decodeAccountingJobs(built(v, 'slurmdb-jobs.json'))), '2001').standard_output,
    );
    expect(out[0]).toBeUndefined();
    expect(out.slice(1).every((o) => o === '/home/alice/slurm-%j.out')).toBe(true);
  });
});

describe("Soperator's recorded data", () => {
  it('decodes the v0.0.41 node', () => {
    const r = v004x.decodeNode(readJson('recorded', 'soperator', 'usual_node_rest.json'));
    expect(r.ok).toBe(true);
    const n = (r as { item: SlurmNode }).item;
    expect(n.state).toEqual({ base: 'IDLE', flags: ['DYNAMIC_NORM'] });
    expect([n.name, n.address, n.comment, n.cpus, n.alloc_idle_cpus, n.effective_cpus]).toEqual([
      'worker-1',
      '10.0.0.1',
      'comment',
      16,
      16,
      16,
    ]);
    expect([n.real_memory, n.free_mem, n.specialized_memory, n.specialized_cpus_count]).toEqual([191356, 168840, 0, 0]);
    expect(parseTres(n.tres).gpus).toBe(1);
    expect(n.tres_used).toBeUndefined();
    expect(n.slurmd_version).toBe('24.05.7');
  });

  it('decodes the v0.0.41 two-node job', () => {
    const r = v004x.decodeJob(readJson('recorded', 'soperator', '2_node_job.json'));
    expect(r.ok).toBe(true);
    const j = (r as { item: SlurmJob }).item;
    expect([j.job_id, j.state, j.nodes, j.time_limit, j.array_job_id, j.array_task_id]).toEqual([
      '349',
      ['COMPLETED'],
      'worker-[1,0]',
      1,
      '0',
      undefined,
    ]);
    expect(expandHostlist(j.nodes)).toEqual(['worker-1', 'worker-0']);
    expect(jobCpuCount(j)).toBe(4);
    expect(jobMemoryBytes(j)).toBe(382712 * 1024 * 1024);
    expect(j.end_time).toBe(1749564041);
    expect(j.mail_user).toBe('root');
  });

  it('decodes the v0.0.44 diag with values above 2^32 exactly', () => {
    const d = items(v004x.decodeDiag(readJson('recorded', 'soperator', 'sdiag_rest.json')));
    const diag = d[0] as SlurmDiag;
    expect(diag.schedule_cycle_sum).toBe(6442450944);
    expect(diag.rpcs_by_message_type.map((r) => [r.message_type, r.count, r.total_time_us, r.average_time_us])).toEqual(
      [
        ['REQUEST_NODE_INFO', 205430, 6871947674, 33452],
        ['REQUEST_JOB_INFO', 102715, 512238, 4987],
      ],
    );
    expect(diag.rpcs_by_user).toEqual([
      { user: 'root', user_id: 0, count: 308145, total_time_us: 7384185912, average_time_us: 23963 },
    ]);
    const meta = v004x.decodeDiag(readJson('recorded', 'soperator', 'sdiag_rest.json'));
    expect(meta.ok && meta.meta).toEqual({
      data_parser: 'data_parser/v0.0.44',
      slurm_release: '25.11.5',
      cluster: 'soperator',
    });
  });
});
