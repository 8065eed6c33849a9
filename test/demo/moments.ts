/**
 * Moments of a fake cluster worth rendering: the opening scene, and the first moments at which a
 * node is DOWN + NOT_RESPONDING, a node drains with jobs still on it, and a job has timed out.
 * Every shape the renderers can produce shows up in one of them, so a schema or decoder test over
 * these moments covers them all (and `coverage` says so, or the test fails).
 */
import { FakeCluster } from '../../src/demo/fake-cluster.js';
import type { ClusterView } from '../../src/demo/fake-cluster-types.js';
import { type ClusterTruth, knownTruth } from '../support/fake-cluster-truth.js';

export interface Moment {
  readonly label: string;
  readonly view: ClusterView;
  readonly truth: ClusterTruth;
}

const STEP_MS = 10 * 60_000;
const LIMIT_MS = 48 * 3600_000;

type Probe = (t: ClusterTruth) => boolean;

const PROBES: readonly (readonly [string, Probe])[] = [
  [
    'node DOWN+NOT_RESPONDING',
    (t) => t.nodes.some((n) => n.state.base === 'DOWN' && n.state.flags.includes('NOT_RESPONDING')),
  ],
  [
    'node draining with jobs',
    (t) => t.nodes.some((n) => n.state.base !== 'IDLE' && n.state.base !== 'DOWN' && n.state.flags.includes('DRAIN')),
  ],
  ['job TIMEOUT', (t) => t.jobs.some((j) => j.state[0] === 'TIMEOUT')],
  ['job requeued', (t) => t.jobs.some((j) => (j.restart_cnt ?? 0) > 0 && j.state[0] === 'PENDING')],
];

export function interestingMoments(seed: number, nodes = 8): Moment[] {
  const cluster = new FakeCluster({ nodes, seed });
  const take = (label: string): Moment => ({ label, view: cluster.view(), truth: knownTruth(cluster) });
  const start = take('start');
  const moments = [start];
  const wanted = new Map(PROBES);
  while (wanted.size > 0 && cluster.now - start.truth.nowMs < LIMIT_MS) {
    cluster.advance(STEP_MS);
    const truth = knownTruth(cluster);
    for (const [label, probe] of wanted) {
      if (!probe(truth)) continue;
      moments.push(take(label));
      wanted.delete(label);
    }
  }
  return moments;
}

/** Which of the interesting shapes the moments contain (the caller expects all of them). */
export function coverage(moments: readonly Moment[]): Record<string, boolean> {
  const truths = moments.map((m) => m.truth);
  const anyJob = (p: (j: ClusterTruth['jobs'][number]) => boolean) => truths.some((t) => t.jobs.some(p));
  const out: Record<string, boolean> = {};
  for (const [label, probe] of PROBES) out[label] = truths.some(probe);
  out['node IDLE+DRAIN'] = truths.some((t) =>
    t.nodes.some((n) => n.state.base === 'IDLE' && n.state.flags.includes('DRAIN')),
  );
  out['pending array master'] = anyJob((j) => j.array_task_id?.includes('%') === true && j.state[0] === 'PENDING');
  out['running array task'] = anyJob(
    (j) => j.array_job_id !== undefined && /^\d+$/.test(j.array_task_id ?? '') && j.state[0] === 'RUNNING',
  );
  out['GPU job'] = anyJob((j) => j.tres_alloc_str?.includes('gres/gpu=') === true);
  out['unlimited job'] = anyJob((j) => j.time_limit_unlimited === true);
  out['pending Resources'] = anyJob((j) => j.state_reason === 'Resources');
  out['pending Priority'] = anyJob((j) => j.state_reason === 'Priority');
  for (const s of ['COMPLETED', 'FAILED', 'CANCELLED']) out[`job ${s}`] = anyJob((j) => j.state[0] === s);
  return out;
}
