/** Properties of observe() and advance() over arbitrary snapshots, duplicates and junk included. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nodeState } from '../../../src/cluster/api/decode/states.js';
import type { SlurmDiag, SlurmJob, SlurmNode } from '../../../src/cluster/model.js';
import { observe } from '../../../src/cluster/observe.js';
import { advance, INITIAL_CLUSTER_STATE } from '../../../src/cluster/state.js';
import { materialized, type Attributes, type MetricSpec } from '../../../src/telemetry/spec.js';
import { snapshot, T0 } from './helpers.js';

const WORDS = [
  'IDLE',
  'DOWN',
  'MIXED',
  'ALLOCATED',
  'ERROR',
  'UNKNOWN',
  'FUTURE',
  'DRAIN',
  'MAINTENANCE',
  'RESERVED',
  'COMPLETING',
  'FAIL',
  'PLANNED',
  'NOT_RESPONDING',
  'INVALID',
  'CLOUD',
  'POWER_DOWN',
  'POWER_DRAIN',
  'POWERED_DOWN',
  'POWERING_DOWN',
  'POWERING_UP',
  'POWER_UP',
  'BLOCKED',
  'DYNAMIC_NORM',
  'WHATEVER_NEXT',
];
const JOB_WORDS = [
  'PENDING',
  'RUNNING',
  'SUSPENDED',
  'COMPLETED',
  'CANCELLED',
  'FAILED',
  'TIMEOUT',
  'REQUEUED',
  'COMPLETING',
  'EXPEDITING',
];

const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
const name = fc.constantFrom('n1', 'n2', 'gpu-01', 'a08', 'x');
const text = opt(fc.string({ maxLength: 60 }));
const time = opt(
  fc.oneof(fc.integer({ min: 1.7e9, max: 1.8e9 }), fc.constant(0), fc.double({ min: -10, max: 2e9, noNaN: true })),
);
const count = opt(fc.oneof(fc.nat(512), fc.double({ min: 0, max: 1e6, noNaN: true })));
const tres = opt(
  fc.constantFrom(
    'cpu=4,mem=8G,gres/gpu=2',
    'cpu=1',
    'gres/gpu:h100=4',
    'mem=100M',
    '',
    'garbage',
    'cpu=x,gres/gpu=-1',
  ),
);
const hostlist = fc.constantFrom(
  '',
  'n1',
  'n[1-2]',
  'a[08-10],b5',
  'n1,n1',
  'None assigned',
  '(null)',
  'n[3-1]',
  'n[1-',
  'worker-[1,0]',
);

const nodeArb: fc.Arbitrary<SlurmNode> = fc
  .record({
    name,
    words: fc.array(fc.constantFrom(...WORDS), { maxLength: 5 }),
    reason: text,
    comment: text,
    address: text,
    reservation: text,
    partitions: fc.array(fc.constantFrom('cpu', 'gpu', 'cpu'), { maxLength: 3 }),
    cpus: count,
    alloc_cpus: count,
    alloc_idle_cpus: count,
    effective_cpus: count,
    real_memory: count,
    alloc_memory: count,
    free_mem: count,
    specialized_memory: count,
    tres,
  })
  .map(({ words, ...n }) => ({ ...n, state: nodeState(words) }));

const jobArb: fc.Arbitrary<SlurmJob> = fc.record({
  source: fc.constantFrom('controller' as const, 'accounting' as const),
  job_id: fc.constantFrom('1', '2', '3', '42'),
  state: fc.array(fc.constantFrom(...JOB_WORDS), { maxLength: 3 }),
  nodes: hostlist,
  gres_detail: opt(
    fc.array(fc.constantFrom('gpu:h100:2(IDX:0-1)', '', 'junk', 'gpu:1(IDX:0),gpu:a:1(IDX:0)', 'gpu:1(IDX:9-0'), {
      maxLength: 4,
    }),
  ),
  name: text,
  state_reason: text,
  partition: text,
  user_name: opt(fc.constantFrom('alice', 'bob', '')),
  mail_user: opt(fc.constantFrom('alice', 'a@b', '')),
  user_id: opt(fc.nat(70000)),
  standard_error: text,
  standard_output: text,
  array_job_id: opt(fc.constantFrom('1', '7')),
  array_task_id: opt(fc.constantFrom('3', '4-7%2')),
  submit_time: time,
  start_time: time,
  end_time: time,
  time_limit: count,
  cpus: count,
  node_count: count,
  memory_per_node: count,
  tres_alloc_str: tres,
  tres_req_str: tres,
});

const diagArb: fc.Arbitrary<SlurmDiag> = fc.record({
  server_thread_count: count,
  req_time_start: time,
  rpcs_by_message_type: fc.array(
    fc.record({
      message_type: fc.constantFrom('REQUEST_PING', 'REQUEST_NODE_INFO'),
      count: fc.nat(),
      total_time_us: fc.nat(),
    }),
    { maxLength: 4 },
  ),
  rpcs_by_user: fc.array(
    fc.record({
      user: fc.constantFrom('root', 'alice'),
      user_id: opt(fc.nat(2000)),
      count: fc.nat(),
      total_time_us: fc.nat(),
    }),
    { maxLength: 4 },
  ),
});

const snapArb = fc.record({
  nodes: opt(fc.array(nodeArb, { maxLength: 8 })),
  jobs: opt(fc.array(jobArb, { maxLength: 8 })),
  diag: opt(diagArb),
});

function checkAttributes(spec: MetricSpec, attributes: Attributes): void {
  expect(Object.keys(attributes).sort()).toEqual([...spec.attributes].sort());
  for (const v of Object.values(attributes)) {
    expect(typeof v).toBe('string');
    expect(v).not.toMatch(/^(undefined|null|NaN)$/);
  }
}

describe('observe() properties', () => {
  it('every label is a string, every family has its exact label keys, no attribute set twice, values finite', () => {
    fc.assert(
      fc.property(snapArb, (s) => {
        const families = observe(snapshot({ atMs: T0, seq: 1, ...s }), T0);
        for (const f of families.map(materialized)) {
          const seen = new Set<string>();
          for (const p of f.points) {
            checkAttributes(f.spec, p.attributes);
            const key = JSON.stringify(f.spec.attributes.map((k) => p.attributes[k]));
            expect(seen.has(key), `${f.spec.name} ${key}`).toBe(false);
            seen.add(key);
            if ('value' in p) expect(Number.isFinite(Number(p.value))).toBe(true);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('advance() properties', () => {
  it('events carry their spec labels as strings and finite, positive (or ≥ 0 for durations and series starts) values', () => {
    fc.assert(
      fc.property(
        fc.array(snapArb, { minLength: 1, maxLength: 5 }),
        fc.array(fc.integer({ min: 0, max: 600_000 }), { minLength: 5, maxLength: 5 }),
        (snaps, gaps) => {
          let state = INITIAL_CLUSTER_STATE;
          let at = T0;
          snaps.forEach((s, i) => {
            at += gaps[i] ?? 0;
            const out = advance(state, snapshot({ atMs: at, seq: i + 1, ...s }));
            state = out.state;
            for (const e of out.events) {
              checkAttributes(e.spec, e.attributes);
              expect(Number.isFinite(e.value)).toBe(true);
              expect(e.value).toBeGreaterThanOrEqual(0);
              // A counter's only 0 starts a GPU node's series in its current state.
              if (e.spec.kind === 'counter' && e.value === 0) expect(e.spec.name).toBe('slurm_node_gpu_seconds');
              else if (e.spec.kind === 'counter') expect(e.value).toBeGreaterThan(0);
            }
          });
        },
      ),
      { numRuns: 200 },
    );
  });
});
