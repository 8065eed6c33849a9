/** Every agent's catalogue, by README section: the docs generator and the docs test read this. */
import {
  CLUSTER_EVENT_METRICS,
  CLUSTER_METRICS,
  CLUSTER_SELF_METRICS,
  EXTRA_SPECS,
  NATIVE_SPECS,
  NATIVE_USER_ACCOUNT_SPECS,
} from './cluster/metrics.js';
import { NODE_METRICS, NODE_SELF_METRICS } from './node/metrics.js';
import { PROCESS_METRICS } from './telemetry/process-metrics.js';
import type { MetricSpec } from './telemetry/spec.js';

export const DOC_TABLES: Readonly<Record<string, readonly MetricSpec[]>> = {
  'node-metrics': Object.values(NODE_METRICS),
  'node-self-metrics': Object.values(NODE_SELF_METRICS),
  'cluster-metrics': [...Object.values(CLUSTER_METRICS), ...Object.values(CLUSTER_EVENT_METRICS)],
  'cluster-native-metrics': NATIVE_SPECS,
  'cluster-native-user-account-metrics': NATIVE_USER_ACCOUNT_SPECS,
  'cluster-extra-metrics': EXTRA_SPECS,
  'cluster-self-metrics': Object.values(CLUSTER_SELF_METRICS),
  'process-metrics': Object.values(PROCESS_METRICS),
};
