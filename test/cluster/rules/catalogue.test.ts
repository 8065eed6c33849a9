/** The cluster catalogue against the contract: Soperator's documented names, kinds and labels. */
import { describe, expect, it } from 'vitest';
import {
  CLUSTER_EVENT_METRICS,
  CLUSTER_EVENT_SPECS,
  CLUSTER_METRICS,
  CLUSTER_SELF_METRICS,
  DURATION_BUCKETS,
  NATIVE_SPECS,
  NATIVE_USER_ACCOUNT_SPECS,
} from '../../../src/cluster/metrics.js';
import { prometheusName, type MetricSpec } from '../../../src/telemetry/spec.js';

const byProm = (specs: readonly MetricSpec[]) => Object.fromEntries(specs.map((s) => [prometheusName(s), s]));
const snapshotSpecs = byProm(Object.values(CLUSTER_METRICS));
const eventSpecs = byProm(CLUSTER_EVENT_SPECS);
const selfSpecs = byProm(Object.values(CLUSTER_SELF_METRICS));

/**
 * Retyped from Soperator's documented metric tables (name, type, labels), plus the two GPU additions. The four node
 * families slurmctld also serves carry its `node` label after Soperator's.
 */
const CONTRACT: Record<string, [string, string[]]> = {
  slurm_node_gpu_seconds_total: [
    'counter',
    ['node_name', 'state_base', 'state_is_drain', 'state_is_maintenance', 'state_is_reserved'],
  ],
  slurm_node_fails_total: [
    'counter',
    ['node_name', 'state_base', 'state_is_drain', 'state_is_maintenance', 'state_is_reserved', 'reason'],
  ],
  slurm_node_unavailability_duration_seconds: ['histogram', ['node_name']],
  slurm_node_draining_duration_seconds: ['histogram', ['node_name']],
  slurm_node_cpus_total: ['gauge', ['node_name']],
  slurm_node_cpus_allocated: ['gauge', ['node_name']],
  slurm_node_cpus_idle: ['gauge', ['node_name']],
  slurm_node_cpus_effective: ['gauge', ['node_name']],
  slurm_node_memory_total_bytes: ['gauge', ['node_name']],
  slurm_node_memory_allocated_bytes: ['gauge', ['node_name']],
  slurm_node_memory_free_bytes: ['gauge', ['node_name']],
  slurm_node_memory_effective_bytes: ['gauge', ['node_name']],
  slurm_node_partition: ['gauge', ['node_name', 'partition']],
  slurm_node_job: ['gauge', ['job_id', 'node_name', 'nvlink_instance_group', 'nodeset_name']],
  slurm_node_nvlink_instance_group: ['gauge', ['node_name', 'instance_id', 'nvlink_instance_group', 'nodeset_name']],
  slurm_job_duration_seconds: ['gauge', ['job_id']],
  slurm_job_cpus: ['gauge', ['job_id']],
  slurm_job_memory_bytes: ['gauge', ['job_id']],
  slurm_controller_rpc_calls_total: ['counter', ['message_type']],
  slurm_controller_rpc_duration_seconds_total: ['counter', ['message_type']],
  slurm_controller_rpc_user_calls_total: ['counter', ['user', 'user_id']],
  slurm_controller_rpc_user_duration_seconds_total: ['counter', ['user', 'user_id']],
  slurm_controller_server_thread_count: ['gauge', []],
  slurm_job_gpus: ['gauge', ['job_id']],
  slurm_job_gpu_seconds_total: ['counter', ['job_id']],
};

const NODE_INFO = [
  'node_name',
  'instance_id',
  'nodeset_name',
  'state_base',
  'state_is_drain',
  'state_is_maintenance',
  'state_is_reserved',
  'state_is_completing',
  'state_is_fail',
  'state_is_planned',
  'state_is_not_responding',
  'state_is_invalid',
  'state_is_cloud',
  'state_is_power_down',
  'state_is_power_drain',
  'state_is_powered_down',
  'state_is_powering_down',
  'state_is_powering_up',
  'state_is_power_up',
  'is_unavailable',
  'reservation_name',
  'address',
  'reason',
  'comment',
];
const JOB_INFO_DOCUMENTED = [
  'job_id',
  'job_state',
  'job_state_reason',
  'slurm_partition',
  'job_name',
  'user_name',
  'user_id',
  'standard_error',
  'standard_output',
  'array_job_id',
  'array_task_id',
  'submit_time',
  'start_time',
  'end_time',
  'finished_time',
];

describe('cluster catalogue', () => {
  it('declares exactly the contract families, under their Prometheus names, kinds and labels', () => {
    const all = { ...snapshotSpecs, ...eventSpecs };
    expect(Object.keys(all).sort()).toEqual([...Object.keys(CONTRACT), 'slurm_node_info', 'slurm_job_info'].sort());
    for (const [name, [kind, labels]] of Object.entries(CONTRACT)) {
      expect([name, all[name]?.kind, all[name]?.attributes]).toEqual([name, kind, labels]);
    }
  });

  it('slurm_node_info carries every documented label, in order; slurm_job_info adds user_mail', () => {
    expect(CLUSTER_METRICS.nodeInfo.attributes).toEqual(NODE_INFO);
    expect(CLUSTER_METRICS.jobInfo.attributes.filter((a) => a !== 'user_mail')).toEqual(JOB_INFO_DOCUMENTED);
    expect(CLUSTER_METRICS.jobInfo.attributes).toContain('user_mail');
  });

  it("Slurm's native families add names only: none is one of the contract's", () => {
    for (const s of [...NATIVE_SPECS, ...NATIVE_USER_ACCOUNT_SPECS]) expect(CONTRACT[s.name], s.name).toBeUndefined();
  });

  it('OTLP names never end in _total except gauges Soperator named so', () => {
    for (const s of [
      ...Object.values(CLUSTER_METRICS),
      ...CLUSTER_EVENT_SPECS,
      ...Object.values(CLUSTER_SELF_METRICS),
    ]) {
      if (s.name.endsWith('_total')) expect([s.name, s.kind]).toEqual([s.name, 'gauge']);
    }
  });

  it('event families are counters or histograms; only they are; the histograms use Soperator buckets', () => {
    expect(Object.keys(eventSpecs).sort()).toEqual([
      'slurm_node_draining_duration_seconds',
      'slurm_node_fails_total',
      'slurm_node_gpu_seconds_total',
      'slurm_node_unavailability_duration_seconds',
    ]);
    for (const s of CLUSTER_EVENT_SPECS) expect(['counter', 'histogram']).toContain(s.kind);
    expect(CLUSTER_EVENT_METRICS.nodeUnavailability.buckets).toEqual([
      30, 60, 300, 600, 1800, 3600, 7200, 14400, 28800, 43200, 86400, 172800, 259200, 604800, 1209600, 2592000,
    ]);
    expect(CLUSTER_EVENT_METRICS.nodeDraining.buckets).toBe(DURATION_BUCKETS);
    expect(Object.values(CLUSTER_METRICS).some((s: MetricSpec) => s.kind === 'histogram')).toBe(false);
  });

  it('units: By for bytes, s for seconds, empty for counts', () => {
    for (const s of [
      ...Object.values(CLUSTER_METRICS),
      ...CLUSTER_EVENT_SPECS,
      ...Object.values(CLUSTER_SELF_METRICS),
    ]) {
      const expected = /_bytes$/.test(s.name) ? 'By' : /_seconds$/.test(s.name) ? 's' : '';
      expect([s.name, s.unit]).toEqual([s.name, expected]);
      expect(s.description.length).toBeGreaterThan(10);
    }
  });

  it("self-monitoring: Soperator's family plus stale results, skipped items, API errors, lost fields, bad hostlists, bounded label values, OTLP pushes and points refused", () => {
    expect(
      Object.entries(selfSpecs)
        .map(([n, s]) => [n, s.kind, s.attributes])
        .sort(),
    ).toEqual(
      [
        ['slurm_exporter_collection_duration_seconds', 'gauge', []],
        ['slurm_exporter_collection_attempts_total', 'counter', []],
        ['slurm_exporter_collection_failures_total', 'counter', []],
        ['slurm_exporter_collector_duration_seconds', 'gauge', ['collector']],
        ['slurm_exporter_collector_errors_total', 'counter', ['collector']],
        ['slurm_exporter_collector_error_kinds_total', 'counter', ['collector', 'kind']],
        ['slurm_exporter_collector_inflight', 'gauge', ['collector']],
        ['slurm_exporter_collector_skipped_total', 'counter', ['collector']],
        ['slurm_exporter_collector_stale_results_total', 'counter', ['collector']],
        ['slurm_exporter_skipped_items_total', 'counter', ['collector']],
        ['slurm_exporter_api_errors_total', 'counter', ['collector']],
        ['slurm_exporter_api_fields_lost_total', 'counter', ['collector']],
        ['slurm_exporter_hostlist_errors_total', 'counter', ['collector']],
        ['slurm_exporter_gres_detail_errors_total', 'counter', ['collector']],
        ['slurm_exporter_bounded_label_values_total', 'counter', ['collector']],
        ['slurm_exporter_metrics_requests_total', 'counter', []],
        ['slurm_exporter_metrics_exported', 'gauge', []],
        ['slurm_exporter_otlp_exports_total', 'counter', ['result']],
        ['slurm_exporter_otlp_rejected_points_total', 'counter', []],
      ].sort(),
    );
  });
});
