/**
 * The fake cluster moves the way a Slurm cluster does, deterministically, and never holds an
 * impossible state (more CPUs allocated than a node has, an array over its `%N` limit).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { expandHostlist } from '../../src/cluster/hostlist.js';
import type { SlurmDiag, SlurmJob } from '../../src/cluster/model.js';
import { compressHostlist, DEFAULT_START_MS, FakeCluster, MIN_JOB_AGE_SECONDS } from '../../src/demo/fake-cluster.js';
import { bigCluster } from '../support/big-cluster.js';
import type { ClusterView } from '../../src/demo/fake-cluster.js';
import { FROM_V0040, renderText } from '../../src/demo/slurm-render.js';
import { ENDPOINTS } from './schema.js';
import { V0038_RENDERERS } from '../support/slurm-render-v0038.js';
import { type ClusterTruth, knownTruth } from '../support/fake-cluster-truth.js';

const MIN = 60_000;
const withV0038 = { renderers: V0038_RENDERERS };
const HOUR = 60 * MIN;

/** Every node's allocation equals what its running jobs hold, within its capacity. */
function allocationProblems(v: ClusterView): string[] {
  const held = v.nodes.map(() => ({ cpus: 0, mem: 0, gpus: 0 }));
  for (const j of v.jobs) {
    if (j.state !== 'RUNNING') continue;
    for (const i of j.nodeIdx) {
      const h = held[i] as { cpus: number; mem: number; gpus: number };
      h.cpus += j.cpusPerNode;
      h.mem += j.memPerNodeMiB;
      h.gpus += j.gpusPerNode;
    }
  }
  const problems: string[] = [];
  v.nodes.forEach((n, i) => {
    const h = held[i] as { cpus: number; mem: number; gpus: number };
    if (h.cpus !== n.allocCpus || h.mem !== n.allocMemoryMiB || h.gpus !== n.allocGpus)
      problems.push(`${n.name}: allocation does not match its jobs`);
    if (n.allocCpus > n.cpus || n.allocMemoryMiB > n.realMemoryMiB || n.allocGpus > n.gpus)
      problems.push(`${n.name}: over capacity`);
    if (n.downUntil > 0 && n.allocCpus > 0) problems.push(`${n.name}: DOWN with jobs`);
  });
  const running = new Map<number, number>();
  for (const j of v.jobs)
    if (j.state === 'RUNNING' && j.array !== undefined)
      running.set(j.array.jobId, (running.get(j.array.jobId) ?? 0) + 1);
  for (const j of v.jobs) {
    const a = j.array;
    if (a !== undefined && a.jobId === j.id && (running.get(a.jobId) ?? 0) > a.maxRunning)
      problems.push(`array ${a.jobId} over its limit`);
  }
  return problems;
}

const CUMULATIVE: readonly (keyof SlurmDiag)[] = [
  'jobs_submitted',
  'jobs_started',
  'jobs_completed',
  'jobs_canceled',
  'jobs_failed',
  'schedule_cycle_total',
  'schedule_cycle_sum',
  'bf_cycle_counter',
  'bf_backfilled_jobs',
];

function rpcCounts(d: SlurmDiag): Map<string, [number, number]> {
  const m = new Map<string, [number, number]>();
  for (const r of d.rpcs_by_message_type) m.set(`type:${r.message_type}`, [r.count, r.total_time_us]);
  for (const r of d.rpcs_by_user) m.set(`user:${r.user}`, [r.count, r.total_time_us]);
  return m;
}

describe('the opening scene', () => {
  const c = new FakeCluster({ nodes: 8, seed: 3 });
  const t = knownTruth(c);
  const job = (p: (j: SlurmJob) => boolean) => t.jobs.filter(p);

  it('has a pending array master 4-7%4 held by its limit, with four running tasks', () => {
    const [master] = job((j) => j.array_task_id === '4-7%4');
    expect(master).toMatchObject({ state: ['PENDING'], state_reason: 'JobArrayTaskLimit' });
    const tasks = job((j) => j.array_job_id === master?.job_id && j.state[0] === 'RUNNING');
    expect(tasks.map((j) => j.array_task_id).sort()).toEqual(['0', '1', '2', '3']);
  });

  it('has a GPU job with gres/gpu in its TRES on GPU nodes configured with gres/gpu=8', () => {
    const gpuJobs = job((j) => j.state[0] === 'RUNNING' && /gres\/gpu=\d+/.test(j.tres_alloc_str ?? ''));
    expect(gpuJobs.length).toBeGreaterThan(0);
    const gpuNodes = new Set(gpuJobs.flatMap((j) => expandHostlist(j.nodes)));
    for (const n of t.nodes.filter((n) => gpuNodes.has(n.name))) expect(n.tres).toContain('gres/gpu=8');
  });

  it('has a job without time limit, jobs waiting for Resources and Priority, finished jobs and a drained node', () => {
    expect(job((j) => j.time_limit_unlimited === true && j.state[0] === 'RUNNING').length).toBe(1);
    expect(job((j) => j.state_reason === 'Resources').length).toBeGreaterThan(0);
    expect(job((j) => j.state_reason === 'Priority').length).toBeGreaterThan(0);
    expect(new Set(t.jobs.map((j) => j.state[0]))).toEqual(
      new Set(['RUNNING', 'PENDING', 'COMPLETED', 'FAILED', 'CANCELLED']),
    );
    expect(t.nodes.filter((n) => n.state.flags.includes('DRAIN')).map((n) => n.reason)).toEqual([
      'GPU health check failed: XID 79',
    ]);
  });

  it('is consistent: allocations match the running jobs', () => {
    expect(allocationProblems(c.view())).toEqual([]);
  });
});

describe('over a simulated day', () => {
  const c = new FakeCluster({ nodes: 8, seed: 11 });
  const seen = {
    drained: new Set<string>(),
    resumed: new Set<string>(),
    down: new Set<string>(),
    recovered: new Set<string>(),
  };
  const started = new Set<string>();
  const ended = new Set<string>();
  const problems: string[] = [];
  const threadCounts = new Set<number>();
  let prev = knownTruth(c);
  const first = prev;
  for (let step = 0; step < 24 * 6; step++) {
    c.advance(10 * MIN);
    const now = knownTruth(c);
    problems.push(...allocationProblems(c.view()));
    noteNodeChanges(prev, now, seen);
    noteJobChanges(prev, now, started, ended);
    problems.push(...counterDecreases(prev.diag, now.diag));
    threadCounts.add(now.diag.server_thread_count ?? -1);
    prev = now;
  }

  it('drains nodes with a reason and resumes them; a node goes DOWN+NOT_RESPONDING and comes back', () => {
    expect(seen.drained.size).toBeGreaterThan(0);
    expect(seen.resumed.size).toBeGreaterThan(0);
    expect(seen.down.size).toBeGreaterThan(0);
    expect([...seen.down].some((n) => seen.recovered.has(n))).toBe(true);
  });

  it('starts and ends jobs, submits new ones, forgets finished ones after MinJobAge but keeps them in accounting', () => {
    expect(started.size).toBeGreaterThan(20);
    expect(ended.size).toBeGreaterThan(20);
    const last = knownTruth(c);
    expect(Math.max(...last.jobs.map((j) => Number(j.job_id)))).toBeGreaterThan(
      Math.max(...first.jobs.map((j) => Number(j.job_id))),
    );
    const cutoff = last.nowMs / 1000 - MIN_JOB_AGE_SECONDS;
    expect(last.jobs.filter((j) => (j.end_time ?? Infinity) < cutoff && j.state[0] !== 'RUNNING')).toEqual([]);
    const ctld = new Set(last.jobs.map((j) => j.job_id));
    expect(last.accountingJobs.filter((j) => !ctld.has(j.job_id)).length).toBeGreaterThan(20);
  });

  it('never holds an impossible allocation', () => {
    expect(problems).toEqual([]);
  });

  it('counters only grow, and do grow; server_thread_count moves', () => {
    for (const k of CUMULATIVE) expect(prev.diag[k] as number, k).toBeGreaterThan(first.diag[k] as number);
    expect(threadCounts.size).toBeGreaterThan(2);
  });
});

function noteNodeChanges(prev: ClusterTruth, now: ClusterTruth, seen: Record<string, Set<string>>): void {
  now.nodes.forEach((n, i) => {
    const p = prev.nodes[i];
    if (p === undefined) return;
    const drain = (x: typeof n) => x.state.flags.includes('DRAIN');
    const down = (x: typeof n) => x.state.base === 'DOWN' && x.state.flags.includes('NOT_RESPONDING');
    if (!drain(p) && drain(n) && n.reason !== undefined) seen['drained']?.add(n.name);
    if (drain(p) && !drain(n)) seen['resumed']?.add(n.name);
    if (!down(p) && down(n) && n.reason === 'Not responding') seen['down']?.add(n.name);
    if (down(p) && !down(n) && n.state.flags.length === 0) seen['recovered']?.add(n.name);
  });
}

function noteJobChanges(prev: ClusterTruth, now: ClusterTruth, started: Set<string>, ended: Set<string>): void {
  const before = new Map(prev.jobs.map((j) => [j.job_id, j.state[0]]));
  for (const j of now.jobs) {
    const was = before.get(j.job_id);
    if (j.state[0] === 'RUNNING' && was !== 'RUNNING') started.add(j.job_id);
    if (j.state[0] !== 'RUNNING' && j.state[0] !== 'PENDING' && was !== j.state[0]) ended.add(j.job_id);
  }
}

function counterDecreases(prev: SlurmDiag, now: SlurmDiag): string[] {
  const out: string[] = [];
  for (const k of CUMULATIVE) if ((now[k] as number) < (prev[k] as number)) out.push(`${k} decreased`);
  const before = rpcCounts(prev);
  for (const [k, [count, total]] of rpcCounts(now)) {
    const [c0, t0] = before.get(k) ?? [0, 0];
    if (count < c0 || total < t0) out.push(`${k} decreased`);
  }
  for (const k of before.keys()) if (!rpcCounts(now).has(k)) out.push(`${k} disappeared`);
  return out;
}

describe('determinism', () => {
  const run = (seed: number, steps: readonly number[]): FakeCluster => {
    const c = new FakeCluster({ nodes: 8, seed });
    for (const s of steps) c.advance(s);
    return c;
  };

  it('the same seed and time give byte-identical bodies for every endpoint', () => {
    const a = run(5, [3 * HOUR]);
    const b = run(5, [3 * HOUR]);
    for (const e of ENDPOINTS)
      for (const v of ['v0.0.38', 'v0.0.44'] as const)
        if (v !== 'v0.0.38' || !FROM_V0040.has(e))
          expect(renderText(a, v, e, withV0038)).toBe(renderText(b, v, e, withV0038));
  });

  it('another seed gives another cluster', () => {
    expect(renderText(run(5, [3 * HOUR]), 'v0.0.44', 'jobs')).not.toBe(
      renderText(run(6, [3 * HOUR]), 'v0.0.44', 'jobs'),
    );
  });

  it('how time is cut into advance() calls does not matter', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.array(fc.integer({ min: 0, max: 40 * MIN }), { minLength: 1, maxLength: 12 }),
        (seed, steps) => {
          const total = steps.reduce((a, b) => a + b, 0);
          expect(knownTruth(run(seed, steps))).toEqual(knownTruth(run(seed, [total])));
        },
      ),
      { numRuns: 25 },
    );
  });

  it('allocations stay consistent for any seed and cluster size', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 1, max: 24 }), (seed, nodes) => {
        const c = new FakeCluster({ nodes, seed });
        for (let i = 0; i < 12; i++) {
          c.advance(20 * MIN);
          expect(allocationProblems(c.view())).toEqual([]);
        }
      }),
      { numRuns: 20 },
    );
  });
});

describe('options and helpers', () => {
  it('refuses to go back in time and rejects inconsistent sizes', () => {
    const c = new FakeCluster();
    expect(() => c.advance(-1)).toThrow(RangeError);
    c.advanceTo(DEFAULT_START_MS - HOUR);
    expect(c.now).toBe(DEFAULT_START_MS);
    expect(() => new FakeCluster({ nodes: 3, partitions: [{ name: 'a', nodes: 2 }] })).toThrow(RangeError);
    expect(() => new FakeCluster({ nodes: 0 })).toThrow(RangeError);
  });

  it('custom partitions name and size the nodes', () => {
    const c = new FakeCluster({
      partitions: [
        { name: 'a100', nodes: 2, gpusPerNode: 4, prefix: 'g' },
        { name: 'batch', nodes: 3, cpusPerNode: 32 },
      ],
    });
    const t = knownTruth(c);
    expect(t.nodes.map((n) => n.name)).toEqual(['g-001', 'g-002', 'batch-001', 'batch-002', 'batch-003']);
    expect(t.nodes[0]?.tres).toContain('gres/gpu=4');
    expect(t.nodes[2]?.cpus).toBe(32);
    expect(allocationProblems(c.view())).toEqual([]);
  });

  it('compressHostlist is the inverse of the agent’s hostlist expansion', () => {
    const name = fc.tuple(
      fc.constantFrom('gpu-', 'cpu-', 'n', 'rack1-node'),
      fc.integer({ min: 0, max: 300 }),
      fc.constantFrom(1, 3, 5),
    );
    fc.assert(
      fc.property(
        fc.uniqueArray(name, {
          minLength: 1,
          maxLength: 40,
          selector: ([p, n, w]) => `${p}${String(n).padStart(w, '0')}`,
        }),
        (parts) => {
          const names = parts.map(([p, n, w]) => `${p}${String(n).padStart(w, '0')}`);
          expect(new Set(expandHostlist(compressHostlist(names)))).toEqual(new Set(names));
        },
      ),
    );
  });
});

describe('bigCluster', () => {
  it('fills a large cluster: most jobs run, some wait, a few just finished, nothing impossible', () => {
    const c = bigCluster({ nodes: 1000, jobs: 5000, seed: 2 });
    const v = c.view();
    const count = (s: string) => v.jobs.filter((j) => j.state === s).length;
    expect(v.nodes.length).toBe(1000);
    expect(v.jobs.length).toBe(5000);
    expect(count('RUNNING')).toBeGreaterThan(2500);
    expect(count('PENDING')).toBeGreaterThan(100);
    expect(5000 - count('RUNNING') - count('PENDING')).toBeGreaterThan(100);
    expect(allocationProblems(v)).toEqual([]);
    c.advance(5 * MIN);
    expect(allocationProblems(c.view())).toEqual([]);
  });
});
