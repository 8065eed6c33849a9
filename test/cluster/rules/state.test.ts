/** Transitions across refreshes, driven by a fake clock carried in the snapshots. */
import { describe, expect, it } from 'vitest';
import * as v0038 from '../../../src/cluster/api/decode/decode-v0038.js';
import { DURATION_BUCKETS } from '../../../src/cluster/metrics.js';
import type { SlurmJob, SlurmNode } from '../../../src/cluster/model.js';
import { advance, advanceSteps, INITIAL_CLUSTER_STATE, type ClusterState } from '../../../src/cluster/state.js';
import { Slice } from '../../../src/steps.js';
import type { MetricEvent } from '../../../src/telemetry/spec.js';
import { recorded } from '../fixtures.js';
import { eventsOf, job, node, ok, snapshot, T0, type Refresh } from './helpers.js';

const FAILS = 'slurm_node_fails';
const UNAVAIL = 'slurm_node_unavailability_duration_seconds';
const DRAINING = 'slurm_node_draining_duration_seconds';
const NODE_GPU = 'slurm_node_gpu_seconds';

/** Runs refreshes in order and returns the events of each step. */
function run(
  refreshes: readonly Refresh[],
  from: ClusterState = INITIAL_CLUSTER_STATE,
): { steps: MetricEvent[][]; state: ClusterState } {
  let state = from;
  const steps: MetricEvent[][] = [];
  for (const r of refreshes) {
    const out = advance(state, snapshot(r));
    state = out.state;
    steps.push(out.events);
  }
  return { steps, state };
}

/** Refreshes of node lists, one every `everyS` seconds, seq 1, 2, ... */
function nodeRefreshes(lists: readonly (readonly SlurmNode[])[], everyS = 60): Refresh[] {
  return lists.map((nodes, i) => ({ atMs: T0 + i * everyS * 1000, seq: i + 1, nodes }));
}

const values = (events: readonly MetricEvent[]) => events.map((e) => e.value);

describe('node fails', () => {
  const healthy = node('n1', ['MIXED']);
  const down = node('n1', ['DOWN'], { reason: 'hw error' });

  it('increments once per transition to failed, labelled with the state and reason', () => {
    const { steps } = run(
      nodeRefreshes([
        [healthy],
        [down],
        [down],
        [node('n1', ['IDLE'])],
        [node('n1', ['IDLE', 'DRAIN'], { reason: 'xid 79' })],
      ]),
    );
    expect(steps.map((s) => eventsOf(s, FAILS).length)).toEqual([0, 1, 0, 0, 1]);
    expect(eventsOf(steps[1] ?? [], FAILS)[0]).toMatchObject({
      value: 1,
      attributes: {
        node_name: 'n1',
        state_base: 'DOWN',
        state_is_drain: 'false',
        state_is_maintenance: 'false',
        state_is_reserved: 'false',
        reason: 'hw error',
      },
    });
    expect(eventsOf(steps[4] ?? [], FAILS)[0]?.attributes).toMatchObject({
      state_base: 'IDLE',
      state_is_drain: 'true',
      reason: 'xid 79',
    });
  });

  it('DOWN → DRAIN is not a new failure', () => {
    const { steps } = run(nodeRefreshes([[healthy], [down], [node('n1', ['IDLE', 'DRAIN'])]]));
    expect(steps.map((s) => eventsOf(s, FAILS).length)).toEqual([0, 1, 0]);
  });

  it('reason is empty when the node has none', () => {
    const { steps } = run(nodeRefreshes([[healthy], [node('n1', ['MIXED', 'DRAIN'])]]));
    expect(eventsOf(steps[1] ?? [], FAILS)[0]?.attributes['reason']).toBe('');
  });

  it('does not count power-managed nodes going down or draining', () => {
    const { steps } = run(
      nodeRefreshes([
        [node('c1', ['IDLE', 'CLOUD'])],
        [node('c1', ['DOWN', 'CLOUD', 'POWERING_DOWN'])],
        [node('c1', ['IDLE', 'CLOUD', 'POWERED_DOWN', 'DRAIN'])],
        [node('c1', ['IDLE', 'CLOUD', 'POWERING_UP'])],
        [node('c1', ['IDLE', 'CLOUD'])],
      ]),
    );
    expect(steps.flat().filter((e) => e.spec.name !== NODE_GPU)).toEqual([]);
  });

  it('does not count a node that appears already failed, nor one on the first refresh', () => {
    const { steps } = run(nodeRefreshes([[down], [down, node('n2', ['DOWN'])]]));
    expect(steps.flat()).toEqual([]);
  });
});

describe('unavailability durations', () => {
  it('observes the outage length when the node comes back', () => {
    const { steps } = run(
      nodeRefreshes(
        [
          [node('n1', ['IDLE'])],
          [node('n1', ['DOWN'])],
          [node('n1', ['DOWN', 'NOT_RESPONDING'])],
          [node('n1', ['IDLE', 'DRAIN'])],
          [node('n1', ['IDLE'])],
        ],
        30,
      ),
    );
    expect(steps.map((s) => values(eventsOf(s, UNAVAIL)))).toEqual([[], [], [], [], [90]]);
    expect(eventsOf(steps[4] ?? [], UNAVAIL)[0]?.attributes).toEqual({ node_name: 'n1' });
    expect(eventsOf(steps[4] ?? [], UNAVAIL)[0]?.spec.buckets).toEqual(DURATION_BUCKETS);
  });

  it('the first refresh only starts tracking: an outage in progress is measured from it', () => {
    const { steps } = run(nodeRefreshes([[node('n1', ['DOWN'])], [node('n1', ['DOWN'])], [node('n1', ['IDLE'])]], 45));
    expect(steps.map((s) => values(eventsOf(s, UNAVAIL)))).toEqual([[], [], [90]]);
  });

  it('a restart (fresh state) forgets outages in progress', () => {
    const first = run(nodeRefreshes([[node('n1', ['IDLE'])], [node('n1', ['DOWN'])]]));
    expect(first.state.nodes?.unavailableSince.get('n1')).toBe(T0 + 60_000);
    const later = run([
      { atMs: T0 + 600_000, seq: 1, nodes: [node('n1', ['DOWN'])] },
      { atMs: T0 + 660_000, seq: 2, nodes: [node('n1', ['IDLE'])] },
    ]);
    expect(values(eventsOf(later.steps.flat(), UNAVAIL))).toEqual([60]);
  });

  it('excludes power-managed nodes', () => {
    const { steps } = run(
      nodeRefreshes([
        [node('c1', ['DOWN', 'POWERED_DOWN'])],
        [node('c1', ['IDLE', 'POWERING_UP'])],
        [node('c1', ['IDLE'])],
      ]),
    );
    expect(eventsOf(steps.flat(), UNAVAIL)).toEqual([]);
  });

  it('forgets a node that disappears, with its open outage', () => {
    const { steps, state } = run(
      nodeRefreshes([[node('n1', ['IDLE'])], [node('n1', ['DOWN'])], [], [node('n1', ['IDLE'])]]),
    );
    expect(eventsOf(steps.flat(), UNAVAIL)).toEqual([]);
    expect(state.nodes?.unavailableSince.size).toBe(0);
    expect([...(state.nodes?.byName.keys() ?? [])]).toEqual(['n1']);
  });
});

describe('draining durations', () => {
  it('observes drain-with-jobs until the node is drained, then the outage separately', () => {
    const { steps } = run(
      nodeRefreshes([
        [node('n1', ['MIXED'])],
        [node('n1', ['MIXED', 'DRAIN'])],
        [node('n1', ['ALLOCATED', 'DRAIN'])],
        [node('n1', ['IDLE', 'DRAIN'])],
        [node('n1', ['IDLE'])],
      ]),
    );
    expect(steps.map((s) => values(eventsOf(s, DRAINING)))).toEqual([[], [], [], [120], []]);
    expect(steps.map((s) => values(eventsOf(s, UNAVAIL)))).toEqual([[], [], [], [], [60]]);
    expect(steps.map((s) => eventsOf(s, FAILS).length)).toEqual([0, 1, 0, 0, 0]);
  });

  it('excludes power-managed drains', () => {
    const { steps } = run(
      nodeRefreshes([
        [node('c1', ['MIXED'])],
        [node('c1', ['MIXED', 'DRAIN', 'POWER_DOWN'])],
        [node('c1', ['IDLE', 'POWERED_DOWN'])],
      ]),
    );
    expect(eventsOf(steps.flat(), DRAINING)).toEqual([]);
  });
});

describe('node GPU seconds', () => {
  const gpuNode = (words: string[]) => node('g1', words, { tres: 'cpu=128,mem=1000G,gres/gpu=8,gres/gpu:h100=8' });

  it('elapsed × configured GPUs, labelled with the state at the start of the interval', () => {
    const { steps } = run(nodeRefreshes([[gpuNode(['MIXED'])], [gpuNode(['DOWN'])], [gpuNode(['IDLE', 'DRAIN'])]], 30));
    const gpu = steps.map((s) => eventsOf(s, NODE_GPU));
    const mixed = {
      node_name: 'g1',
      state_base: 'MIXED',
      state_is_drain: 'false',
      state_is_maintenance: 'false',
      state_is_reserved: 'false',
    };
    expect(gpu[1]?.map((e) => [e.value, e.attributes])).toEqual([
      [240, mixed],
      [0, { ...mixed, state_base: 'DOWN' }],
    ]);
    expect(gpu[2]?.map((e) => [e.value, e.attributes['state_base'], e.attributes['state_is_drain']])).toEqual([
      [240, 'DOWN', 'false'],
      [0, 'IDLE', 'true'],
    ]);
  });

  it('the first refresh starts the series of each GPU node at 0, in its state then', () => {
    const { steps } = run(nodeRefreshes([[gpuNode(['IDLE', 'MAINTENANCE'])], [gpuNode(['IDLE', 'MAINTENANCE'])]], 30));
    expect(steps.map((s) => eventsOf(s, NODE_GPU).map((e) => [e.value, e.attributes]))).toEqual([
      [
        [
          0,
          {
            node_name: 'g1',
            state_base: 'IDLE',
            state_is_drain: 'false',
            state_is_maintenance: 'true',
            state_is_reserved: 'false',
          },
        ],
      ],
      [
        [
          240,
          {
            node_name: 'g1',
            state_base: 'IDLE',
            state_is_drain: 'false',
            state_is_maintenance: 'true',
            state_is_reserved: 'false',
          },
        ],
      ],
    ]);
  });

  it('nothing for nodes without GPUs or nodes that disappeared; a new GPU node starts at 0', () => {
    const cpu = node('c1', ['IDLE'], { tres: 'cpu=64,mem=257000M' });
    const { steps } = run(
      nodeRefreshes([
        [cpu, gpuNode(['IDLE'])],
        [cpu, node('g2', ['IDLE'], { tres: 'gres/gpu=4' })],
        [cpu, node('g2', ['IDLE'], { tres: 'gres/gpu=4' })],
      ]),
    );
    expect(steps.map((s) => eventsOf(s, NODE_GPU).map((e) => [e.attributes['node_name'], e.value]))).toEqual([
      [['g1', 0]],
      [['g2', 0]],
      [['g2', 240]],
    ]);
  });

  it('a node whose GPUs are gone adds its last interval and starts no new series', () => {
    const { steps } = run(nodeRefreshes([[gpuNode(['IDLE'])], [node('g1', ['DOWN'], { tres: 'cpu=128' })]], 30));
    expect(steps.map((s) => eventsOf(s, NODE_GPU).map((e) => [e.attributes['state_base'], e.value]))).toEqual([
      [['IDLE', 0]],
      [['IDLE', 240]],
    ]);
  });
});

describe('refresh bookkeeping', () => {
  it('acts only on a new nodes seq: the same or an older one gives no events', () => {
    const a = advance(
      INITIAL_CLUSTER_STATE,
      snapshot({ atMs: T0, seq: 5, nodes: [node('n1', ['IDLE'], { tres: 'gres/gpu=1' })] }),
    );
    const same = advance(
      a.state,
      snapshot({ atMs: T0 + 30_000, seq: 5, nodes: [node('n1', ['DOWN'], { tres: 'gres/gpu=1' })] }),
    );
    const older = advance(
      a.state,
      snapshot({ atMs: T0 + 30_000, seq: 4, nodes: [node('n1', ['DOWN'], { tres: 'gres/gpu=1' })] }),
    );
    expect(same.events).toEqual([]);
    expect(older.events).toEqual([]);
    expect(same.state).toEqual(a.state);
    const newer = advance(
      a.state,
      snapshot({ atMs: T0 + 30_000, seq: 6, nodes: [node('n1', ['DOWN'], { tres: 'gres/gpu=1' })] }),
    );
    expect(newer.events.map((e) => e.spec.name).sort()).toEqual([FAILS, NODE_GPU, NODE_GPU]);
  });

  it('a snapshot without nodes keeps the node tracking untouched', () => {
    const a = run(nodeRefreshes([[node('n1', ['DOWN'])]]));
    const b = advance(a.state, { atMs: T0 + 60_000 });
    expect(b.events).toEqual([]);
    expect(b.state.nodes).toBe(a.state.nodes);
  });

  it('nodes and jobs advance on their own sequence numbers', () => {
    const running = job('1', ['RUNNING'], { start_time: T0 / 1000 - 3600, tres_alloc_str: 'cpu=1,gres/gpu=2' });
    const n = node('g1', ['IDLE'], { tres: 'gres/gpu=1' });
    const s1 = snapshot({ atMs: T0, seq: 1, nodes: [n], jobs: [running] });
    const r1 = advance(INITIAL_CLUSTER_STATE, s1);
    // Nodes refreshed again, jobs not (its last good result is still seq 1).
    const s2 = { ...s1, atMs: T0 + 30_000, nodes: { value: [n], atMs: T0 + 30_000, seq: 2 } };
    const r2 = advance(r1.state, s2);
    expect(r2.events.map((e) => e.spec.name)).toEqual([NODE_GPU]);
    const s3 = { ...s2, atMs: T0 + 60_000, jobs: { value: [running], atMs: T0 + 60_000, seq: 3 } };
    const r3 = advance(r2.state, s3);
    expect(r3.events).toEqual([]);
    expect(r2.state.jobs?.gpuSeconds.get('1')?.seconds).toBe(0);
    expect(r3.state.jobs?.gpuSeconds.get('1')).toEqual({ seconds: 120, sinceMs: T0 });
  });

  it('drops a job and its GPU seconds when Slurm no longer lists it', () => {
    const running = job('1', ['RUNNING'], { start_time: T0 / 1000 - 3600, tres_alloc_str: 'cpu=1,gres/gpu=2' });
    const r1 = advance(INITIAL_CLUSTER_STATE, snapshot({ atMs: T0, seq: 1, jobs: [running] }));
    const r2 = advance(r1.state, snapshot({ atMs: T0 + 30_000, seq: 2, jobs: [running] }));
    expect(r2.state.jobs?.gpuSeconds.get('1')?.seconds).toBe(60);
    const r3 = advance(r2.state, snapshot({ atMs: T0 + 60_000, seq: 3, jobs: [] }));
    expect(r3.state.jobs?.gpuSeconds.size).toBe(0);
  });
});

describe('job GPU seconds', () => {
  const startS = T0 / 1000;
  const gpus4 = { tres_alloc_str: 'cpu=8,mem=64G,node=1,gres/gpu=4,gres/gpu:h100=4' };

  /** What each refresh added to each job's GPU seconds (jobs that added nothing left out). */
  function jobSteps(lists: readonly (readonly SlurmJob[])[], everyS = 30): Record<string, number>[] {
    let state = INITIAL_CLUSTER_STATE;
    return lists.map((jobs, i) => {
      const before = state.jobs?.gpuSeconds;
      state = advance(state, snapshot({ atMs: T0 + i * everyS * 1000, seq: i + 1, jobs })).state;
      const added: Record<string, number> = {};
      for (const [id, g] of state.jobs?.gpuSeconds ?? []) {
        const d = g.seconds - (before?.get(id)?.seconds ?? 0);
        if (d > 0) added[id] = d;
      }
      return added;
    });
  }

  it('first refresh only starts tracking; then elapsed × allocated GPUs for running jobs', () => {
    const j = job('7', ['RUNNING'], { start_time: startS - 600, ...gpus4 });
    expect(jobSteps([[j], [j], [j]])).toEqual([{}, { 7: 120 }, { 7: 120 }]);
  });

  it('clips to the job start and to its real end', () => {
    const started = job('8', ['RUNNING'], { start_time: startS + 40, ...gpus4 });
    const ended = job('9', ['COMPLETED'], { start_time: startS - 600, end_time: startS + 40, ...gpus4 });
    const runningThen = job('9', ['RUNNING'], { start_time: startS - 600, ...gpus4 });
    // Refreshes at +0, +30, +60: job 8 starts at +40, job 9 ends at +40.
    expect(jobSteps([[runningThen], [runningThen, started], [ended, started]])).toEqual([
      {},
      { 9: 120 },
      { 8: 80, 9: 40 },
    ]);
  });

  it('a job that started and ended between two refreshes gets exactly its run', () => {
    const quick = job('10', ['FAILED'], { start_time: startS + 5, end_time: startS + 15, ...gpus4 });
    expect(jobSteps([[], [quick], [quick]])).toEqual([{}, { 10: 40 }, {}]);
  });

  it('nothing for pending, suspended, GPU-less jobs or jobs without a start or an end', () => {
    const list = [
      job('1', ['PENDING'], { start_time: startS - 10, ...gpus4 }),
      job('2', ['SUSPENDED'], { start_time: startS - 600, ...gpus4 }),
      job('3', ['RUNNING'], { start_time: startS - 600, tres_alloc_str: 'cpu=8,mem=8G' }),
      job('4', ['RUNNING'], { ...gpus4 }),
      job('5', ['CANCELLED'], { start_time: startS - 600, ...gpus4 }),
    ];
    expect(jobSteps([list, list])).toEqual([{}, {}]);
  });

  it('in pieces, as the agent publishes: the same state and events, with pauses where the slice is due', () => {
    const list = (n: number): SlurmJob[] =>
      Array.from({ length: n }, (_, i) =>
        job(String(i + 1), ['RUNNING'], { start_time: startS - 600, ...(i % 3 === 0 ? gpus4 : {}) }),
      );
    const nodes = (down: string): SlurmNode[] =>
      ['n1', 'n2', 'n3'].map((n) => node(n, n === down ? ['DOWN'] : ['MIXED'], { tres: 'cpu=64,gres/gpu=8' }));
    const first = snapshot({ atMs: T0, seq: 1, jobs: list(1000), nodes: nodes('') });
    const second = snapshot({ atMs: T0 + 30_000, seq: 2, jobs: list(1200), nodes: nodes('n2') });
    const straight = advance(advance(INITIAL_CLUSTER_STATE, first).state, second);
    const steps = advanceSteps(advance(INITIAL_CLUSTER_STATE, first).state, second, new Slice(0));
    let pauses = 0;
    let r = steps.next();
    for (; r.done !== true; r = steps.next()) pauses++;
    // Between the four passes over the nodes, after them, then every 256 jobs.
    expect(pauses).toBe(3 + 1 + Math.floor(1200 / 256));
    expect(r.value).toEqual(straight);
    expect(r.value.state.jobs?.gpuSeconds.get('1')?.seconds).toBe(120);
    expect(eventsOf(r.value.events, FAILS).map((e) => e.attributes['node_name'])).toEqual(['n2']);
  });

  it('a job listed twice is counted once', () => {
    const j = job('7', ['RUNNING'], { start_time: startS - 600, ...gpus4 });
    expect(
      jobSteps([
        [j, j],
        [j, j],
      ]),
    ).toEqual([{}, { 7: 120 }]);
  });
});

describe('recorded Slurm 22.05 scenario (v0.0.38): drain, down, resume, not responding, recovered', () => {
  const steps = [
    '01-jobs',
    '02-drain-node2',
    '03-down-node3',
    '04-resume-node3',
    '06a-node4-notresponding',
    '06b-node4-down',
    '07-recovered',
  ];
  const lists = steps.map((s) => ok(v0038.decodeNodes(recorded('v0.0.38', `${s}-nodes.json`))));
  const { steps: events } = run(nodeRefreshes(lists, 60));

  it('counts the three failures with their reasons', () => {
    const fails = events.map((s) =>
      eventsOf(s, FAILS).map((e) => [
        e.attributes['node_name'],
        e.attributes['state_base'],
        e.attributes['state_is_drain'],
        e.attributes['reason'],
      ]),
    );
    expect(fails).toEqual([
      [],
      [['node2', 'MIXED', 'true', 'bad hca']],
      [['node3', 'DOWN', 'false', 'test']],
      [],
      [],
      [['node4', 'DOWN', 'false', 'Not responding']],
      [],
    ]);
  });

  it('observes node3 down for 60 s, node4 unavailable for 120 s and node2 draining for 300 s', () => {
    expect(events.map((s) => eventsOf(s, UNAVAIL).map((e) => [e.attributes['node_name'], e.value]))).toEqual([
      [],
      [],
      [],
      [['node3', 60]],
      [],
      [],
      [['node4', 120]],
    ]);
    expect(events.map((s) => eventsOf(s, DRAINING).map((e) => [e.attributes['node_name'], e.value]))).toEqual([
      [],
      [],
      [],
      [],
      [],
      [],
      [['node2', 300]],
    ]);
  });

  it('accrues 2 GPUs × 60 s per step on node3 and node4, by the state at each step start', () => {
    const gpu = events.flatMap((s) => eventsOf(s, NODE_GPU)).filter((e) => e.value > 0);
    expect(gpu.every((e) => e.value === 120 && ['node3', 'node4'].includes(e.attributes['node_name'] ?? ''))).toBe(
      true,
    );
    expect(gpu).toHaveLength(12);
    const node3Bases = gpu.filter((e) => e.attributes['node_name'] === 'node3').map((e) => e.attributes['state_base']);
    expect(node3Bases).toEqual(['MIXED', 'MIXED', 'DOWN', 'IDLE', 'IDLE', 'MIXED']);
  });

  it('starts a series at 0 when a GPU node is first seen and whenever its state labels change', () => {
    const starts = events.map((s) =>
      eventsOf(s, NODE_GPU)
        .filter((e) => e.value === 0)
        .map((e) => `${e.attributes['node_name']}:${e.attributes['state_base']}`),
    );
    expect(starts).toEqual([
      ['node3:MIXED', 'node4:MIXED'],
      [],
      ['node3:DOWN'],
      ['node3:IDLE'],
      [],
      ['node3:MIXED', 'node4:DOWN'],
      ['node4:IDLE'],
    ]);
  });
});
