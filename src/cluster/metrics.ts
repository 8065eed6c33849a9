/**
 * The cluster agent's metric families, declared once, under the names Soperator's Slurm exporter
 * documents (OTLP names carry no `_total`: the Prometheus side adds it to counters).
 *
 * Two kinds of families, kept in separate records because telemetry/ feeds them differently:
 * - CLUSTER_METRICS describe the latest snapshot (observe → the snapshot producer). The RPC
 *   counters belong here: slurmctld already accumulates them, we only copy its totals.
 * - CLUSTER_EVENT_METRICS accumulate transitions seen between two refreshes (state.advance →
 *   SDK synchronous counters and histograms), so only this process can know them.
 */
import { checkCatalogue } from '../telemetry/spec.js';
import { CLUSTER_EVENT_SPECS } from './metrics/events.js';
import { EXTRA_SPECS } from './metrics/extra.js';
import { values } from './metrics/gauge.js';
import {
  NATIVE_NODE_SHARED_METRICS,
  NATIVE_NODE_SHARED_OTLP_METRICS,
  NATIVE_SPECS,
  NATIVE_USER_ACCOUNT_SPECS,
} from './metrics/native.js';
import { CLUSTER_SELF_METRICS } from './metrics/self.js';
import { CLUSTER_METRICS } from './metrics/soperator.js';

export * from './metrics/soperator.js';
export * from './metrics/events.js';
export * from './metrics/self.js';
export * from './metrics/native.js';
export * from './metrics/extra.js';

// Each endpoint has one meaning per name: /metrics/nodes reuses four of /metrics' names.
checkCatalogue([...NATIVE_SPECS, ...values(NATIVE_NODE_SHARED_METRICS)]);
checkCatalogue([
  ...Object.values(CLUSTER_METRICS),
  ...CLUSTER_EVENT_SPECS,
  ...Object.values(CLUSTER_SELF_METRICS),
  ...NATIVE_SPECS,
  ...NATIVE_USER_ACCOUNT_SPECS,
  ...EXTRA_SPECS,
  ...values(NATIVE_NODE_SHARED_OTLP_METRICS),
]);
