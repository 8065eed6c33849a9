/** Slurm's own job families (`/metrics/jobs`, `/metrics/jobs-users-accts`), from /jobs. */
import { point, type Family, type AttributesOf } from '../../telemetry/spec.js';
import {
  NATIVE_ACCOUNT_METRICS,
  NATIVE_JOB_METRICS,
  NATIVE_JOB_STATES,
  NATIVE_USER_METRICS,
  type NativeJobState,
} from '../metrics.js';
import { addJob, newTotals, type JobTotals, type JobView, type TresOf } from './native-counting.js';
import type { GaugeSpec } from './helpers.js';
import { eachInSlices, type Slice, type Steps } from '../../steps.js';

/** The job families of one grouping: the whole cluster (no label), per user or per account. */
interface JobSpecs<L extends string> {
  readonly jobs: GaugeSpec<L>;
  readonly states: Readonly<Record<NativeJobState, GaugeSpec<L>>>;
  readonly cpusAlloc: GaugeSpec<L>;
  readonly memoryAlloc: GaugeSpec<L>;
  readonly nodesAlloc: GaugeSpec<L>;
  readonly gpusAlloc: GaugeSpec<L>;
}

/**
 * `label` is the families' one key (none for the whole cluster): another name does not compile.
 * An empty key (a job without an account) leaves the label out, as slurmctld does.
 */
function totalsFamilies<L extends string>(
  specs: JobSpecs<L>,
  rows: ReadonlyMap<string, JobTotals>,
  label: NoInfer<L> | undefined,
): Family[] {
  // A computed key has type string to the compiler: the cast restores the label the caller was held to.
  const attrs = (k: string) => (label === undefined || k === '' ? {} : { [label]: k }) as AttributesOf<GaugeSpec<L>>;
  const fam = (spec: GaugeSpec<L>, value: (t: JobTotals) => number): Family => ({
    spec,
    points: [...rows].map(([k, t]) => point(spec, attrs(k), value(t))),
  });
  return [
    fam(specs.jobs, (t) => t.jobs),
    ...NATIVE_JOB_STATES.map((s) => fam(specs.states[s], (t) => t.states[s])),
    fam(specs.cpusAlloc, (t) => t.cpusAlloc),
    fam(specs.memoryAlloc, (t) => t.memoryAllocMiB),
    fam(specs.nodesAlloc, (t) => t.nodesAlloc ?? t.nodes.size),
    fam(specs.gpusAlloc, (t) => t.gpusAlloc),
  ];
}

/**
 * The job families, in pieces that yield within the jobs when the slice is due (nativeGroupSteps):
 * at 100,000 jobs the pass over them takes tens of milliseconds.
 */
export function* jobFamilySteps(
  jobs: readonly JobView[],
  tres: TresOf,
  usersAccounts: boolean,
  busyNodes: number | undefined,
  slice: Slice,
): Steps<{ all: Family[]; usersAccounts: Family[] }> {
  const all = newTotals();
  const byUser = new Map<string, JobTotals>();
  const byAccount = new Map<string, JobTotals>();
  const group = (m: Map<string, JobTotals>, k: string): JobTotals =>
    m.get(k) ?? (m.set(k, newTotals()).get(k) as JobTotals);
  yield* eachInSlices(
    jobs,
    (v) => {
      addJob(all, v, v.tasks, tres);
      if (!usersAccounts) return;
      addJob(group(byUser, v.job.user_name ?? ''), v, 1, tres);
      addJob(group(byAccount, v.job.account ?? ''), v, 1, tres);
    },
    slice,
  );
  if (busyNodes !== undefined) all.nodesAlloc = busyNodes;
  return {
    all: totalsFamilies(NATIVE_JOB_METRICS, new Map([['', all]]), undefined),
    usersAccounts: !usersAccounts
      ? []
      : [
          ...totalsFamilies(NATIVE_USER_METRICS, byUser, 'username'),
          ...totalsFamilies(NATIVE_ACCOUNT_METRICS, byAccount, 'account'),
        ],
  };
}
