/**
 * The event families: transitions seen between two refreshes (state.advance → SDK synchronous counters
 * and histograms), so only this process can know them. OTLP names carry no `_total`: the Prometheus
 * side adds it to counters.
 */
import { closedValues, defineMetric as spec } from '../../telemetry/spec.js';
import type { MetricSpec } from '../../telemetry/spec.js';
import { DURATION_BUCKETS, LEGACY_STATE_LABELS, LEGACY_STATE_VALUES } from './soperator.js';

const NODE = ['node_name'] as const;

export const CLUSTER_EVENT_METRICS = {
  nodeGpuSeconds: closedValues(
    spec(
      'counter',
      'slurm_node_gpu_seconds',
      's',
      ['node_name', ...LEGACY_STATE_LABELS],
      'GPU seconds accumulated by nodes: time between two node refreshes × GPUs configured on the node, by the state the node was in; a GPU node has its series from the first refresh that sees it in a state (at 0).',
    ),
    LEGACY_STATE_VALUES,
  ),
  nodeFails: closedValues(
    spec(
      'counter',
      'slurm_node_fails',
      '',
      ['node_name', ...LEGACY_STATE_LABELS, 'reason'],
      'Times a node went from a healthy state to DOWN or DRAIN, with the state and reason it failed with. Power-managed nodes are not counted.',
    ),
    LEGACY_STATE_VALUES,
  ),
  nodeUnavailability: spec(
    'histogram',
    'slurm_node_unavailability_duration_seconds',
    's',
    NODE,
    'Length of node outages (down, not responding, idle and drained, ...), observed when the outage ends. Power-managed nodes are excluded; tracking starts afresh when the exporter restarts.',
    DURATION_BUCKETS,
  ),
  nodeDraining: spec(
    'histogram',
    'slurm_node_draining_duration_seconds',
    's',
    NODE,
    'Length of draining periods (DRAIN while jobs still run), observed when draining ends. Tracking starts afresh when the exporter restarts.',
    DURATION_BUCKETS,
  ),
} as const;

export type ClusterEventSpec = MetricSpec & { kind: 'counter' | 'histogram' };

/** The event families as telemetry's Pipeline wants them (`eventSpecs`). */
export const CLUSTER_EVENT_SPECS: readonly ClusterEventSpec[] = Object.values(CLUSTER_EVENT_METRICS);
