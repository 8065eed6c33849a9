/**
 * Slurm's native families from the responses a real Slurm 22.05 gave (recorded with the CLI
 * output of the same moment): node and job counts must be what sinfo and squeue printed.
 */
import { describe, expect, it } from 'vitest';
import { decodeDiag, decodeJobs, decodeNodes } from '../../../src/cluster/api/decode/decode-v0038.js';
import { decodePartition } from '../../../src/cluster/api/decode/decode-partitions.js';
import { decodeList } from '../../../src/cluster/api/decode/envelope.js';
import {
  NATIVE_JOB_STATES,
  NATIVE_NODE_STATES,
  NATIVE_SPECS,
  NATIVE_USER_ACCOUNT_SPECS,
} from '../../../src/cluster/metrics.js';
import {
  arrayTaskCount,
  jobStateNames,
  nativeFamilies,
  nativeGroups,
  nativeGroupSteps,
  nativeJobPartition,
  nativeSections,
  nodeGpusAlloc,
  nodeStateNames,
} from '../../../src/cluster/observe/native.js';
import { expandHostlist } from '../../../src/cluster/hostlist.js';
import type { SlurmPartition } from '../../../src/cluster/model.js';
import { observe } from '../../../src/cluster/observe.js';
import type { ClusterSnapshot } from '../../../src/cluster/snapshot.js';
import type { AnyFamily } from '../../../src/telemetry/spec.js';
import { listFiles, readText, recorded } from '../fixtures.js';
import { job, node, ok, points, T0, valuesBy } from './helpers.js';
import { Slice } from '../../../src/steps.js';
import { bigCluster } from '../../support/big-cluster.js';
import { knownTruth } from '../../support/fake-cluster-truth.js';

const V38 = 'v0.0.38';
const DIR = ['recorded', 'slurm-22.05', 'dbd', V38];

function at<T>(value: T) {
  return { value, atMs: T0, seq: 1 };
}

const partition = (name: string): SlurmPartition => ({ name, nodes: '' });

function cliSection(text: string, title: string): string[][] {
  const lines = text.split('\n');
  const start = lines.indexOf(`### ${title}`);
  const out: string[][] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('###')) break;
    if (line.trim() !== '') out.push(line.trim().split(/\s+/));
  }
  return out;
}

/** sinfo -N -l rows: [node, partition, state word] (the first two lines are a date and a header). */
function sinfoNodes(cli: string): { node: string; partition: string; state: string; cpus: number }[] {
  return cliSection(cli, 'sinfo -N -l')
    .slice(2)
    .map((r) => ({
      node: r[0] as string,
      partition: (r[2] as string).replace('*', ''),
      state: r[3] as string,
      cpus: Number(r[4]),
    }));
}

/** squeue -t all rows: [partition, state, reason] (its first line is the header). */
/** squeue's rows; `tasks`: what its job id says a record holds (`6_[4-7%4]`: 4 pending tasks). */
function squeueJobs(cli: string): { partition: string; state: string; reason: string; tasks: number }[] {
  return cliSection(cli, 'squeue -t all')
    .slice(1)
    .map((r) => ({
      partition: r[1] as string,
      state: r[3] as string,
      reason: r[4] as string,
      tasks: squeueTasks(r[0] as string),
    }));
}

function squeueTasks(id: string): number {
  const m = /_\[([^\]]+)\]$/.exec(id);
  if (!m) return 1;
  let n = 0;
  for (const part of (m[1] as string).split('%')[0]?.split(',') ?? []) {
    const [lo, hi] = part.split('-').map(Number);
    n += hi === undefined ? 1 : hi - (lo as number) + 1;
  }
  return n;
}

const TERMINAL_SQUEUE = new Set([
  'COMPLETED',
  'CANCELLED',
  'FAILED',
  'TIMEOUT',
  'NODE_FAIL',
  'PREEMPTED',
  'OUT_OF_MEMORY',
]);

function scalar(families: readonly AnyFamily[], name: string): number {
  const p = points(families, name);
  expect(p.length, name).toBe(1);
  return Number(p[0]?.value);
}

const count = <T>(list: readonly T[], pred: (x: T) => boolean): number => list.filter(pred).length;

function snapshotOf(step: string): ClusterSnapshot {
  const files = listFiles(...DIR);
  const read = (what: string) =>
    files.includes(`${step}-${what}.json`) ? recorded(V38, `${step}-${what}.json`) : undefined;
  const nodes = read('nodes');
  const jobs = read('jobs');
  const parts = read('partitions') ?? recorded(V38, '07-recovered-partitions.json');
  return {
    atMs: T0,
    ...(nodes ? { nodes: at(ok(decodeNodes(nodes))) } : {}),
    ...(jobs ? { jobs: at(ok(decodeJobs(jobs))) } : {}),
    partitions: at(ok(decodeList<SlurmPartition>(parts, 'partitions', decodePartition))),
  };
}

const STEPS = listFiles(...DIR)
  .filter((f) => f.endsWith('-cli.txt') && !f.includes('-job-'))
  .map((f) => f.replace('-cli.txt', ''));

describe("Slurm's native families from real Slurm 22.05 responses", () => {
  for (const step of STEPS) {
    it(`node counts by state agree with sinfo (${step})`, () => {
      const snap = snapshotOf(step);
      if (!snap.nodes) return;
      const sinfo = sinfoNodes(readText(...DIR, `${step}-cli.txt`));
      const f = nativeFamilies(snap);
      expect(scalar(f, 'slurm_nodes')).toBe(new Set(sinfo.map((r) => r.node)).size);
      for (const word of ['draining', 'drained'])
        expect(scalar(f, `slurm_nodes_${word}`), word).toBe(count(sinfo, (r) => r.state.startsWith(word)));
      expect(scalar(f, 'slurm_nodes_noresp')).toBe(count(sinfo, (r) => r.state.endsWith('*')));
      expect(scalar(f, 'slurm_nodes_down')).toBe(count(sinfo, (r) => r.state.startsWith('down')));
      // A draining node is allocated or mixed underneath; every node has exactly one base state.
      const bases = ['alloc', 'mixed', 'idle', 'down', 'future', 'unknown'].map((s) => scalar(f, `slurm_nodes_${s}`));
      expect(bases.reduce((a, b) => a + b, 0)).toBe(sinfo.length);
      expect(scalar(f, 'slurm_nodes_alloc')).toBeGreaterThanOrEqual(count(sinfo, (r) => r.state === 'allocated'));
      expect(scalar(f, 'slurm_nodes_mixed')).toBeGreaterThanOrEqual(count(sinfo, (r) => r.state === 'mixed'));
      expect(scalar(f, 'slurm_nodes_idle')).toBe(count(sinfo, (r) => r.state === 'idle'));
      const parts = valuesBy(f, 'slurm_partition_nodes', 'partition');
      const cpus = valuesBy(f, 'slurm_partition_cpus', 'partition');
      for (const p of new Set(sinfo.map((r) => r.partition))) {
        expect(parts[p], p).toBe(count(sinfo, (r) => r.partition === p));
        expect(cpus[p], p).toBe(sinfo.filter((r) => r.partition === p).reduce((a, r) => a + r.cpus, 0));
      }
    });

    it(`job counts by state and partition agree with squeue (${step})`, () => {
      const snap = snapshotOf(step);
      if (!snap.jobs) return;
      const squeue = squeueJobs(readText(...DIR, `${step}-cli.txt`));
      const f = nativeFamilies(snap);
      // slurmctld counts each task a pending array record holds (in the total, pending and hold).
      const tasks = (rows: typeof squeue): number => rows.reduce((a, r) => a + r.tasks, 0);
      expect(scalar(f, 'slurm_jobs')).toBe(tasks(squeue));
      for (const state of new Set(squeue.map((r) => r.state))) {
        const rows = squeue.filter((r) => r.state === state);
        expect(scalar(f, `slurm_jobs_${state.toLowerCase()}`), state).toBe(
          state === 'PENDING' ? tasks(rows) : rows.length,
        );
      }
      expect(scalar(f, 'slurm_jobs_hold')).toBe(tasks(squeue.filter((r) => r.reason === 'JobHeldUser')));
      expect(scalar(f, 'slurm_jobs_started')).toBe(count(squeue, (r) => r.state !== 'PENDING'));
      // A partition's `jobs` counts records not yet finished.
      const byPartition = valuesBy(f, 'slurm_partition_jobs', 'partition');
      for (const p of new Set(squeue.map((r) => r.partition)))
        expect(byPartition[p], p).toBe(count(squeue, (r) => r.partition === p && !TERMINAL_SQUEUE.has(r.state)));
    });
  }

  it("allocated CPUs, memory and nodes are the running jobs' TRES, as squeue prints them", () => {
    const snap = snapshotOf('01-jobs');
    const f = nativeFamilies(snap);
    const rows = cliSection(readText(...DIR, '01-jobs-cli.txt'), 'squeue -a -l')
      .slice(2)
      .filter((r) => r.includes('RUNNING'));
    const tres = rows.map(
      (r) => Object.fromEntries((r.at(-1) as string).split(',').map((kv) => kv.split('='))) as Record<string, string>,
    );
    expect(scalar(f, 'slurm_jobs_cpus_alloc')).toBe(tres.reduce((a, t) => a + Number(t.cpu), 0));
    // Distinct nodes: a node running several jobs counts once.
    const running = cliSection(readText(...DIR, '01-jobs-cli.txt'), 'squeue -t all')
      .slice(1)
      .filter((r) => r[3] === 'RUNNING');
    const hosts = new Set(running.flatMap((r) => expandHostlist(r[5] as string)));
    expect(hosts.size).toBeLessThan(tres.reduce((a, t) => a + Number(t.node), 0));
    expect(scalar(f, 'slurm_jobs_nodes_alloc')).toBe(hosts.size);
    expect(scalar(f, 'slurm_jobs_memory_alloc')).toBe(
      tres.reduce((a, t) => a + Number((t.mem as string).replace('M', '')), 0),
    );
  });

  it('scheduler families come from diag; those 22.05 cannot carry are absent, not 0', () => {
    const stats = recorded(V38, '01-jobs-diag.json') as { statistics: Record<string, number> };
    const f = nativeFamilies({ atMs: T0, diag: at(ok(decodeDiag(stats))[0] as never) });
    expect(scalar(f, 'slurm_schedule_cycle_cnt')).toBe(stats.statistics.schedule_cycle_total);
    expect(scalar(f, 'slurm_sched_mean_cycle')).toBe(stats.statistics.schedule_cycle_mean);
    expect(scalar(f, 'slurm_sdiag_jobs_submitted')).toBe(stats.statistics.jobs_submitted);
    expect(scalar(f, 'slurm_bf_active')).toBe(0);
    expect(scalar(f, 'slurm_slurmdbd_queue_size')).toBe(stats.statistics.dbd_agent_queue_size);
    expect(scalar(f, 'slurm_last_proc_req_start')).toBe(stats.statistics.req_time_start);
    const names = new Set(f.map((x) => x.spec.name));
    for (const absent of [
      'slurm_sched_exit_end',
      'slurm_bf_exit_end',
      'slurm_schedule_cycle_tot',
      'slurm_bf_cycle_tot',
      'slurm_schedule_cycle_depth',
      'slurm_bf_last_depth',
      'slurm_bf_last_depth_try',
    ])
      expect(names.has(absent), absent).toBe(false);
  });

  it("the v0.0.36 nodes (no flags, no partitions) still give per-partition node counts, from the partitions' hostlists", () => {
    const nodes = ok(decodeNodes(recorded('v0.0.36', '01-jobs-nodes.json')));
    expect(nodes.every((n) => n.partitions.length === 0)).toBe(true);
    const parts = ok(
      decodeList<SlurmPartition>(recorded('v0.0.36', '01-jobs-partitions.json'), 'partitions', decodePartition),
    );
    const f = nativeFamilies({ atMs: T0, nodes: at(nodes), partitions: at(parts) });
    const states = valuesBy(f, 'slurm_partition_nodes_mixed', 'partition');
    const alloc = valuesBy(f, 'slurm_partition_nodes_alloc', 'partition');
    expect((states.cpu ?? 0) + (alloc.cpu ?? 0)).toBe(2);
  });
});

describe('native state names', () => {
  it('tells drained from draining as slurmctld does, and maps every flag word', () => {
    // slurmctld: DRAIN on an allocated or mixed node is draining (not drain); otherwise drain and drained.
    expect(nodeStateNames(node('a', ['IDLE', 'DRAIN']))).toEqual(['idle', 'drain', 'drained']);
    expect(nodeStateNames(node('a', ['MIXED', 'DRAIN']))).toEqual(['mixed', 'draining']);
    expect(nodeStateNames(node('a', ['ALLOCATED', 'DRAIN']))).toEqual(['alloc', 'draining']);
    // COMPLETING alone does not make a drained node draining (IS_NODE_DRAINING looks at the base state).
    expect(nodeStateNames(node('a', ['IDLE', 'DRAIN', 'COMPLETING']))).toEqual([
      'idle',
      'completing',
      'drain',
      'drained',
    ]);
    expect(
      nodeStateNames(node('a', ['DOWN', 'NOT_RESPONDING', 'REBOOT_REQUESTED', 'MAINTENANCE', 'RESERVED'])),
    ).toEqual(['down', 'noresp', 'reboot_req', 'maint', 'resv']);
    expect(nodeStateNames(node('a', ['IDLE', 'SOMETHING_NEW']))).toEqual(['idle']);
  });

  it('counts jobs under base state, flags, started, finished and hold', () => {
    expect(jobStateNames(job('1', ['PENDING', 'REQUEUED'], { state_reason: 'JobHeldAdmin' }))).toEqual([
      'pending',
      'requeued',
      'hold',
    ]);
    expect(jobStateNames(job('1', ['COMPLETED', 'COMPLETING']))).toEqual([
      'completed',
      'completing',
      'started',
      'finished',
    ]);
    expect(jobStateNames(job('1', ['OUT_OF_MEMORY']))).toEqual(['outofmemory', 'started', 'finished']);
    expect(jobStateNames(job('1', ['PENDING', 'EXPEDITING']))).toEqual(['pending', 'expediting']);
  });

  it('every state name it produces has a family', () => {
    expect(new Set(NATIVE_NODE_STATES).size).toBe(27);
    expect(new Set(NATIVE_JOB_STATES).size).toBe(25);
  });
});

describe('per-user and per-account families', () => {
  const jobs = [
    job('1', ['RUNNING'], { user_name: 'alice', account: 'phys', tres_alloc_str: 'cpu=4,mem=1G,node=1' }),
    job('2', ['PENDING'], { user_name: 'alice', account: 'chem' }),
    job('3', ['RUNNING'], { user_name: 'bob', account: 'phys', tres_alloc_str: 'cpu=2,mem=512M,node=1,gres/gpu=1' }),
  ];
  const snap: ClusterSnapshot = { atMs: T0, jobs: at(jobs) };

  it('are off unless asked for', () => {
    const names = new Set(nativeFamilies(snap).map((f) => f.spec.name));
    expect(NATIVE_USER_ACCOUNT_SPECS.some((s) => names.has(s.name))).toBe(false);
  });

  it('split the job families by user and by account', () => {
    const f = nativeFamilies(snap, { userAccountMetrics: true });
    expect(valuesBy(f, 'slurm_user_jobs', 'username')).toEqual({ alice: 2, bob: 1 });
    expect(valuesBy(f, 'slurm_user_jobs_running', 'username')).toEqual({ alice: 1, bob: 1 });
    expect(valuesBy(f, 'slurm_account_jobs_cpus_alloc', 'account')).toEqual({ phys: 6, chem: 0 });
    expect(valuesBy(f, 'slurm_account_jobs_memory_alloc', 'account')).toEqual({ phys: 1536, chem: 0 });
    expect(valuesBy(f, 'slurm_user_jobs_gpus_alloc', 'username')).toEqual({ alice: 0, bob: 1 });
  });
});

describe('names shared with the Soperator families', () => {
  it("the four names both sets use: Soperator's on /metrics (node_name, bytes), slurmctld's on /metrics/nodes", () => {
    const n = node('n1', ['MIXED'], {
      cpus: 8,
      alloc_cpus: 2,
      alloc_idle_cpus: 5,
      effective_cpus: 7,
      real_memory: 100,
      free_mem: 50,
      specialized_memory: 10,
    });
    const snap = { atMs: T0, nodes: at([n]) };
    const f = observe(snap, T0);
    const shared = [
      'slurm_node_cpus_idle',
      'slurm_node_cpus_effective',
      'slurm_node_memory_free_bytes',
      'slurm_node_memory_effective_bytes',
    ];
    for (const name of shared)
      expect(
        points(f, name).map((p) => p.attributes),
        name,
      ).toEqual([{ node_name: 'n1' }]);
    expect(valuesBy(f, 'slurm_node_cpus_idle', 'node_name')).toEqual({ n1: 5 });
    expect(valuesBy(f, 'slurm_node_memory_free_bytes', 'node_name')).toEqual({ n1: 50 * 2 ** 20 });
    const nodesPath = nativeSections(nativeGroups(snap)).get('/metrics/nodes') ?? [];
    // slurmctld: idle = effective - allocated, memory in MiB, effective = RealMemory - MemSpecLimit.
    expect(valuesBy(nodesPath, 'slurm_node_cpus_idle', 'node')).toEqual({ n1: 5 });
    expect(valuesBy(nodesPath, 'slurm_node_cpus_effective', 'node')).toEqual({ n1: 7 });
    expect(valuesBy(nodesPath, 'slurm_node_memory_free_bytes', 'node')).toEqual({ n1: 50 });
    expect(valuesBy(nodesPath, 'slurm_node_memory_effective_bytes', 'node')).toEqual({ n1: 90 });
    expect(valuesBy(nodesPath, 'slurm_node_memory_bytes', 'node')).toEqual({ n1: 100 });
    for (const name of shared)
      expect(
        points(nodesPath, name).map((p) => p.attributes),
        name,
      ).toEqual([{ node: 'n1' }]);
    expect(valuesBy(f, 'slurm_node_cpus', 'node')).toEqual({ n1: 8 });
    expect(valuesBy(f, 'slurm_node_cpus_total', 'node_name')).toEqual({ n1: 8 });
  });

  it("slurmctld's idle CPUs count a drained node's unallocated CPUs, where Slurm's idle count says 0", () => {
    const n = node('n1', ['IDLE', 'DRAIN'], { cpus: 4, alloc_cpus: 0, alloc_idle_cpus: 0, effective_cpus: 4 });
    const nodesPath = nativeSections(nativeGroups({ atMs: T0, nodes: at([n]) })).get('/metrics/nodes') ?? [];
    expect(valuesBy(nodesPath, 'slurm_node_cpus_idle', 'node')).toEqual({ n1: 4 });
  });

  it('counts the tasks a pending array record holds', () => {
    expect(arrayTaskCount({ array_task_id: '2-7%2' })).toBe(6);
    expect(arrayTaskCount({ array_task_id: '1,3,5-9:2' })).toBe(5);
    expect(arrayTaskCount({ array_task_id: '0-15:4' })).toBe(4);
    expect(arrayTaskCount({ array_task_id: '3' })).toBe(1);
    expect(arrayTaskCount({})).toBe(1);
    expect(arrayTaskCount({ array_task_id: 'junk-x' })).toBe(1);
    expect(arrayTaskCount({ array_task_id: '4%2' })).toBe(1);
    expect(arrayTaskCount({ array_task_id: '7,9' })).toBe(2);
    expect(arrayTaskCount({ array_task_id: '0-99999999999' })).toBe(10_000_000);
    const jobs = [
      job('5', ['PENDING'], { array_job_id: '5', array_task_id: '2-7%2', user_name: 'u', account: 'a' }),
      job('6', ['PENDING'], { state_reason: 'JobHeldUser', user_name: 'u', account: 'a' }),
      job('7', ['RUNNING'], { array_job_id: '5', array_task_id: '0', user_name: 'u', account: 'a' }),
    ];
    const g = nativeGroups({ atMs: T0, jobs: at(jobs) }, true);
    // The whole cluster counts tasks; per user and account, slurmctld counts records (but tasks when pending).
    expect(scalar(g.jobs, 'slurm_jobs')).toBe(8);
    expect(scalar(g.jobs, 'slurm_jobs_pending')).toBe(7);
    expect(scalar(g.jobs, 'slurm_jobs_hold')).toBe(1);
    expect(valuesBy(g.usersAccounts, 'slurm_user_jobs', 'username')).toEqual({ u: 3 });
    expect(valuesBy(g.usersAccounts, 'slurm_user_jobs_pending', 'username')).toEqual({ u: 7 });
    expect(valuesBy(g.usersAccounts, 'slurm_account_jobs_pending', 'account')).toEqual({ a: 7 });
  });

  it('distinct allocated nodes: from node states for the cluster, from job hostlists per user', () => {
    const nodes = [node('a', ['MIXED']), node('b', ['ALLOCATED']), node('c', ['IDLE', 'COMPLETING'])];
    const jobs = [
      job('1', ['RUNNING'], { nodes: 'a,b', user_name: 'u' }),
      job('2', ['RUNNING'], { nodes: 'b', user_name: 'u' }),
      job('3', ['RUNNING'], { nodes: 'b', user_name: 'v' }),
    ];
    const g = nativeGroups({ atMs: T0, nodes: at(nodes), jobs: at(jobs) }, true);
    expect(scalar(g.jobs, 'slurm_jobs_nodes_alloc')).toBe(2);
    expect(valuesBy(g.usersAccounts, 'slurm_user_jobs_nodes_alloc', 'username')).toEqual({ u: 2, v: 1 });
    // Without a node list, the jobs' hostlists.
    expect(scalar(nativeGroups({ atMs: T0, jobs: at(jobs) }).jobs, 'slurm_jobs_nodes_alloc')).toBe(2);
  });

  it('leaves an empty user or account label out, as slurmctld does', () => {
    const g = nativeGroups({ atMs: T0, jobs: at([job('1', ['RUNNING'], { user_name: 'u' })]) }, true);
    expect(points(g.usersAccounts, 'slurm_account_jobs').map((p) => [p.attributes, p.value])).toEqual([[{}, 1]]);
    expect(points(g.usersAccounts, 'slurm_user_jobs').map((p) => p.attributes)).toEqual([{ username: 'u' }]);
  });

  it('counts allocated GPUs from the GRES in use (no GPU TRES needed), several types summed', () => {
    expect(nodeGpusAlloc({ gres_used: 'gpu:tesla:1(IDX:0)' })).toBe(1);
    expect(nodeGpusAlloc({ gres_used: 'gpu:tesla:2(IDX:0-1),gpu:a100:1(IDX:2)' })).toBe(3);
    expect(nodeGpusAlloc({ gres_used: 'gpu:0(IDX:N/A)' })).toBe(0);
    expect(nodeGpusAlloc({ gres_used: 'gpu:a:2(IDX:0,3),shard:4(0)' })).toBe(2);
    expect(nodeGpusAlloc({ tres_used: 'cpu=1,gres/gpu=2' })).toBe(2);
    expect(nodeGpusAlloc({})).toBe(0);
  });

  it('a pending job submitted to several partitions of one tier counts in the last one it lists, as slurmctld leaves it', () => {
    expect(nativeJobPartition({ partition: 'cpu,gpu' })).toBe('gpu');
    expect(nativeJobPartition({ partition: 'cpu' })).toBe('cpu');
    expect(nativeJobPartition({ partition: 'cpu,gpu,' })).toBe('gpu');
    expect(nativeJobPartition({ partition: '' })).toBeUndefined();
    expect(nativeJobPartition({})).toBeUndefined();
    const parts = [partition('cpu'), partition('gpu')];
    const jobs = [
      job('1', ['PENDING'], { partition: 'cpu,gpu', node_count: 3, state_reason: 'Resources' }),
      job('2', ['PENDING'], { partition: 'cpu', node_count: 2, state_reason: 'JobHeldUser' }),
      job('3', ['COMPLETED'], { partition: 'cpu' }),
    ];
    const f = nativeGroups({ atMs: T0, jobs: at(jobs), partitions: at(parts) }).partitions;
    // A finished record is not one of the partition's jobs; its state still counts.
    expect(valuesBy(f, 'slurm_partition_jobs', 'partition')).toEqual({ cpu: 1, gpu: 1 });
    expect(valuesBy(f, 'slurm_partition_jobs_completed', 'partition')).toEqual({ cpu: 1, gpu: 0 });
    // Largest minimum node counts of pending jobs, held ones left out of _nohold.
    expect(valuesBy(f, 'slurm_partition_jobs_min_job_nodes', 'partition')).toEqual({ cpu: 2, gpu: 3 });
    expect(valuesBy(f, 'slurm_partition_jobs_min_job_nodes_nohold', 'partition')).toEqual({ cpu: 0, gpu: 3 });
  });

  it("orders a pending job's partitions as slurmctld does: tier first, equal tiers by priority there, then as listed", () => {
    const tiers = new Map([
      ['hi', 3],
      ['cpu', 1],
      ['gpu', 1],
      ['fast', 1],
    ]);
    const queued = { state_reason: 'Resources', submit_time: 100, last_sched_evaluation: 104 };
    // Each pass leaves the job at the last partition it tried: lowest tier, equal tiers the last listed.
    expect(nativeJobPartition({ partition: 'gpu,cpu', ...queued }, tiers)).toBe('cpu');
    expect(nativeJobPartition({ partition: 'cpu,gpu', ...queued }, tiers)).toBe('gpu');
    expect(nativeJobPartition({ partition: 'cpu,hi', ...queued }, tiers)).toBe('cpu');
    expect(nativeJobPartition({ partition: 'hi,cpu', ...queued }, tiers)).toBe('cpu');
    expect(nativeJobPartition({ partition: 'gpu,hi,cpu,hi', ...queued }, tiers)).toBe('cpu');
    // Equal tiers, the job's priority higher in fast: fast is tried first, cpu last.
    const prio = [
      { partition: 'cpu', priority: 100 },
      { partition: 'fast', priority: 1000 },
    ];
    expect(nativeJobPartition({ partition: 'cpu,fast', ...queued, priority_by_partition: prio }, tiers)).toBe('cpu');
    expect(nativeJobPartition({ partition: 'fast,cpu', ...queued, priority_by_partition: prio }, tiers)).toBe('cpu');
    // Without priorities (before v0.0.42), equal tiers stay as listed.
    expect(nativeJobPartition({ partition: 'cpu,fast', ...queued }, tiers)).toBe('fast');
    // Without tiers every partition is Slurm's default tier: as listed.
    expect(nativeJobPartition({ partition: 'cpu,hi', ...queued })).toBe('hi');
  });

  it('a job never queued (held, dependency, begin time) stays where submission left it: the first by tier', () => {
    const tiers = new Map([
      ['hi', 3],
      ['cpu', 1],
      ['gpu', 1],
    ]);
    const fresh = { submit_time: 100, last_sched_evaluation: 100 };
    for (const state_reason of ['JobHeldUser', 'JobHeldAdmin', 'Dependency', 'BeginTime']) {
      expect(nativeJobPartition({ partition: 'cpu,hi', state_reason, ...fresh }, tiers), state_reason).toBe('hi');
      expect(nativeJobPartition({ partition: 'gpu,cpu', state_reason, ...fresh }, tiers), state_reason).toBe('gpu');
    }
    // Priorities do not matter at submission: the tier order alone.
    const prio = [
      { partition: 'gpu', priority: 1 },
      { partition: 'cpu', priority: 9 },
    ];
    expect(
      nativeJobPartition(
        { partition: 'gpu,cpu', state_reason: 'BeginTime', ...fresh, priority_by_partition: prio },
        tiers,
      ),
    ).toBe('gpu');
    // Held after a pass had queued it (evaluated after its submission): where that pass left it.
    const later = { submit_time: 100, last_sched_evaluation: 130 };
    expect(nativeJobPartition({ partition: 'cpu,hi', state_reason: 'JobHeldAdmin', ...later }, tiers)).toBe('cpu');
    // Queued at once (no pass yet, another reason): slurmctld walked all of them.
    expect(nativeJobPartition({ partition: 'gpu,cpu', state_reason: 'Priority', ...fresh }, tiers)).toBe('cpu');
  });

  it("counts a multi-partition job in its partition by the partitions' tiers from /partitions", () => {
    const parts: SlurmPartition[] = [
      { name: 'cpu', nodes: '', priority_tier: 1 },
      { name: 'hi', nodes: '', priority_tier: 3 },
    ];
    const jobs = [
      job('1', ['PENDING'], {
        partition: 'cpu,hi',
        node_count: 2,
        state_reason: 'Resources',
        submit_time: 1,
        last_sched_evaluation: 5,
      }),
      job('2', ['PENDING'], {
        partition: 'cpu,hi',
        node_count: 3,
        state_reason: 'JobHeldUser',
        submit_time: 1,
        last_sched_evaluation: 1,
      }),
    ];
    const f = nativeGroups({ atMs: T0, jobs: at(jobs), partitions: at(parts) }).partitions;
    expect(valuesBy(f, 'slurm_partition_jobs_pending', 'partition')).toEqual({ cpu: 1, hi: 1 });
    expect(valuesBy(f, 'slurm_partition_jobs_hold', 'partition')).toEqual({ cpu: 0, hi: 1 });
    expect(valuesBy(f, 'slurm_partition_jobs_min_job_nodes', 'partition')).toEqual({ cpu: 2, hi: 3 });
  });

  it("a pending job's node range: its maximum for max_job_nodes, never below its minimum (no maximum: 0)", () => {
    const jobs = [
      job('1', ['PENDING'], { partition: 'p', node_count: 2, max_nodes: 5, state_reason: 'JobHeldUser' }),
      job('2', ['PENDING'], { partition: 'p', node_count: 1, max_nodes: 4, state_reason: 'BeginTime' }),
      job('3', ['PENDING'], { partition: 'p', node_count: 3, max_nodes: 0, state_reason: 'Resources' }),
      job('4', ['RUNNING'], { partition: 'p', node_count: 6, max_nodes: 8 }),
    ];
    const f = nativeGroups({ atMs: T0, jobs: at(jobs), partitions: at([partition('p')]) }).partitions;
    expect(valuesBy(f, 'slurm_partition_jobs_max_job_nodes', 'partition')).toEqual({ p: 5 });
    expect(valuesBy(f, 'slurm_partition_jobs_max_job_nodes_nohold', 'partition')).toEqual({ p: 4 });
    expect(valuesBy(f, 'slurm_partition_jobs_min_job_nodes', 'partition')).toEqual({ p: 3 });
    expect(valuesBy(f, 'slurm_partition_jobs_min_job_nodes_nohold', 'partition')).toEqual({ p: 3 });
  });

  it("a pending job's minimum is the node count it asked for (its TRES), not slurmrestd's guess", () => {
    // node_count is slurmctld's guess of the nodes it will give (-n 12 on 4-CPU nodes: 3); the
    // requested TRES carry the job's own minimum, which slurmctld's statistics use.
    const jobs = [
      job('1', ['PENDING'], { partition: 'p', node_count: 3, max_nodes: 12, tres_req_str: 'cpu=12,node=1' }),
      job('2', ['PENDING'], {
        partition: 'p',
        node_count: 4,
        max_nodes: 16,
        tres_req_str: 'cpu=16,node=2',
        state_reason: 'JobHeldUser',
      }),
      // Without a node count in its TRES, the guess is all there is.
      job('3', ['PENDING'], { partition: 'q', node_count: 2, tres_req_str: 'cpu=8' }),
    ];
    const parts = [partition('p'), partition('q')];
    const f = nativeGroups({ atMs: T0, jobs: at(jobs), partitions: at(parts) }).partitions;
    expect(valuesBy(f, 'slurm_partition_jobs_min_job_nodes', 'partition')).toEqual({ p: 2, q: 2 });
    expect(valuesBy(f, 'slurm_partition_jobs_min_job_nodes_nohold', 'partition')).toEqual({ p: 1, q: 2 });
    expect(valuesBy(f, 'slurm_partition_jobs_max_job_nodes', 'partition')).toEqual({ p: 16, q: 2 });
    expect(valuesBy(f, 'slurm_partition_jobs_max_job_nodes_nohold', 'partition')).toEqual({ p: 12, q: 2 });
  });

  it('slurmctld defects not copied: powering_up, the reason bit test, 16-bit sums', () => {
    // slurmctld serves its powering-down count as slurm_nodes_powering_up; the agent counts powering-up nodes.
    const nodes = [node('a', ['IDLE', 'POWERING_DOWN']), node('b', ['IDLE', 'POWERING_UP'])];
    const g = nativeGroups({ atMs: T0, nodes: at(nodes) });
    expect(scalar(g.nodes, 'slurm_nodes_powering_up')).toBe(1);
    // slurmctld tests `state_reason & WAIT_PART_NODE_LIMIT`: true for Resources' neighbours such as
    // ReqNodeNotAvail or PartitionTimeLimit; only PartitionNodeLimit is counted here.
    const jobs = [
      job('1', ['PENDING'], { partition: 'p', state_reason: 'PartitionTimeLimit' }),
      job('2', ['PENDING'], { partition: 'p', state_reason: 'PartitionNodeLimit' }),
      ...Array.from({ length: 70 }, (_, i) =>
        job(String(10 + i), ['RUNNING'], { partition: 'p', tres_alloc_str: 'cpu=1000,node=1' }),
      ),
    ];
    const f = nativeGroups({ atMs: T0, jobs: at(jobs), partitions: at([partition('p')]) });
    expect(valuesBy(f.partitions, 'slurm_partition_jobs_wait_part_node_limit', 'partition')).toEqual({ p: 1 });
    // slurmctld prints the CPU sums as 16-bit integers (70000 would read 4464).
    expect(scalar(f.jobs, 'slurm_jobs_cpus_alloc')).toBe(70_000);
    expect(valuesBy(f.partitions, 'slurm_partition_jobs_cpus_alloc', 'partition')).toEqual({ p: 70_000 });
  });

  it('every native family is a gauge whose Prometheus name has no suffix added', () => {
    for (const s of [...NATIVE_SPECS, ...NATIVE_USER_ACCOUNT_SPECS]) {
      expect(s.kind, s.name).toBe('gauge');
      expect(s.name.endsWith('_total'), s.name).toBe(false);
    }
  });
});

describe('in pieces, as the agent publishes them', () => {
  it('yields within the jobs where the slice is always due, and computes what a straight run does', () => {
    const truth = knownTruth(bigCluster({ nodes: 64, jobs: 1_500 }));
    const names = [...new Set(truth.nodes.flatMap((n) => n.partitions))];
    const parts = names.map((name) => ({
      name,
      nodes: truth.nodes
        .filter((n) => n.partitions.includes(name))
        .map((n) => n.name)
        .join(','),
    }));
    const snap: ClusterSnapshot = {
      atMs: truth.nowMs,
      nodes: at(truth.nodes),
      jobs: at(truth.jobs),
      diag: at(truth.diag),
      partitions: at(parts),
    };
    const steps = nativeGroupSteps(snap, true, new Slice(0));
    let pauses = 0;
    let r = steps.next();
    for (; r.done !== true; r = steps.next()) pauses++;
    // Three passes over the jobs (their views, the job families, the partitions' job families) ask
    // the slice every 256 jobs; it is asked again between the job, node and partition families,
    // twice within the partitions' node families and between those and their job families.
    expect(pauses).toBe(3 * Math.floor(truth.jobs.length / 256) + 5);
    expect(r.value).toEqual(nativeGroups(snap, true));
    expect(r.value.jobs.length).toBeGreaterThan(0);
    expect(r.value.partitions.length).toBeGreaterThan(0);
  });
});
