/** What one collection cycle of the node agent made: its reading, verdicts and families. */
import type { Family } from '../../telemetry/spec.js';
import type { QpState } from '../qp/qp-counters.js';
import type { Attribution } from './attribution.js';
import type { NodeSnapshot } from './snapshot.js';

export interface Cycle {
  readonly snapshot: NodeSnapshot;
  readonly attribution: Attribution;
  readonly families: Family[];
  readonly durationMs: number;
  /** Per-job QP counter totals after this cycle; absent with --qp-counters off. */
  readonly qp?: QpState;
  /**
   * Why this reading cannot stand for the node (sysfs unlistable, out of file descriptors):
   * then it has no families, the attribution state is left as it was, and nothing is published.
   */
  readonly failed?: string;
}
