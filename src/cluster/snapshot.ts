/**
 * What the cluster agent knows at one collection: the last good result of
 * each sub-collector. A failed sub-collector keeps its previous result, so a
 * slurmrestd hiccup on /jobs never blanks the node families.
 */
import type {
  SlurmAccountingLimits,
  SlurmDiag,
  SlurmJob,
  NodeTopology,
  SlurmLicense,
  SlurmNode,
  SlurmPartition,
  SlurmReservation,
  SlurmShare,
} from './model.js';

export const SUB_COLLECTORS = [
  'nodes',
  'jobs',
  'diag',
  'partitions',
  'licenses',
  'reservations',
  'shares',
  'limits',
  'topology',
] as const;
export type SubCollector = (typeof SUB_COLLECTORS)[number];
/**
 * The sub-collectors an operator chooses (the others feed Soperator's families and always run).
 * `topology` reads the Kubernetes API (Soperator's worker pods and Nodes): off by default, as the
 * account needs `list` on pods and nodes, which a default install does not grant.
 */
export const OPTIONAL_SUB_COLLECTORS = [
  'partitions',
  'licenses',
  'reservations',
  'shares',
  'topology',
] as const satisfies readonly SubCollector[];
export type OptionalSubCollector = (typeof OPTIONAL_SUB_COLLECTORS)[number];
/** By default one request more per cycle than Soperator's three: /partitions, for Slurm's partition families. */
export const DEFAULT_OPTIONAL_SUB_COLLECTORS: readonly OptionalSubCollector[] = ['partitions'];

export interface Collected<T> {
  readonly value: T;
  /** When the request that produced it started (ms since epoch). */
  readonly atMs: number;
  /** Increases with every request started; a result older than the stored one is dropped. */
  readonly seq: number;
}

export interface ClusterSnapshot {
  /** Collection time: durations of running jobs are measured to it. */
  readonly atMs: number;
  readonly nodes?: Collected<readonly SlurmNode[]>;
  readonly jobs?: Collected<readonly SlurmJob[]>;
  readonly diag?: Collected<SlurmDiag>;
  readonly partitions?: Collected<readonly SlurmPartition[]>;
  readonly licenses?: Collected<readonly SlurmLicense[]>;
  readonly reservations?: Collected<readonly SlurmReservation[]>;
  readonly shares?: Collected<readonly SlurmShare[]>;
  readonly limits?: Collected<SlurmAccountingLimits>;
  /** Slurm node name → Kubernetes placement (Soperator), when the topology sub-collector is on. */
  readonly topology?: Collected<ReadonlyMap<string, NodeTopology>>;
}
