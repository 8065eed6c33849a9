/** The cluster agent's self-monitoring families. */
import { closedValues, defineMetric, type MetricKind, type MetricSpec } from '../../telemetry/spec.js';
import { FAILURE_KINDS } from '../http/failure.js';
import { SUB_COLLECTORS } from '../snapshot.js';

const COLLECTOR = ['collector'] as const;
/** The sub-collectors: Soperator's three, and the optional ones. */
const COLLECTOR_VALUES = SUB_COLLECTORS;
/** Why a run failed, or `absent`: the endpoint is not served. */
const FAILURE_KIND_VALUES = FAILURE_KINDS;

/** A self-monitoring family; where its points name a sub-collector, it is one of them. */
function spec<K extends MetricKind, const L extends string>(
  kind: K,
  name: string,
  unit: string,
  attributes: readonly L[],
  description: string,
) {
  const family = defineMetric(kind, name, unit, attributes, description);
  const values = (attributes as readonly string[]).includes('collector') ? { collector: COLLECTOR_VALUES } : {};
  return closedValues(family as MetricSpec, values) as typeof family & { readonly values: CollectorValues<L> };
}
type CollectorValues<L extends string> = 'collector' extends L
  ? { readonly collector: typeof COLLECTOR_VALUES }
  : unknown;

/** Self-monitoring, served on the monitoring endpoint. */
export const CLUSTER_SELF_METRICS = {
  collectionDuration: spec(
    'gauge',
    'slurm_exporter_collection_duration_seconds',
    's',
    [],
    'Duration of the last collection tick: from its start until every sub-collector run it started had ended.',
  ),
  collectionAttempts: spec(
    'counter',
    'slurm_exporter_collection_attempts',
    '',
    [],
    'Collection ticks that started at least one sub-collector run, counted when those runs have ended.',
  ),
  collectionFailures: spec(
    'counter',
    'slurm_exporter_collection_failures',
    '',
    [],
    'Collection ticks in which at least one sub-collector run failed.',
  ),
  collectorDuration: spec(
    'gauge',
    'slurm_exporter_collector_duration_seconds',
    's',
    COLLECTOR,
    'Duration of the last run of each sub-collector (nodes, jobs, diag, and partitions, licenses, reservations, shares, limits, topology when on).',
  ),
  collectorErrors: spec(
    'counter',
    'slurm_exporter_collector_errors',
    '',
    COLLECTOR,
    "Failed runs of each sub-collector (Soperator's series; slurm_exporter_collector_error_kinds says why); a failed sub-collector keeps exporting its last good data.",
  ),
  collectorErrorKinds: closedValues(
    spec(
      'counter',
      'slurm_exporter_collector_error_kinds',
      '',
      ['collector', 'kind'],
      'Failed runs of each sub-collector by why they failed (auth, timeout, network, too_large, http, version, decode, api_errors, aborted, internal). `absent`: slurmrestd does not serve the endpoint on the negotiated API version, counted once when found (its families are then absent; it is asked again every 10 minutes).',
    ),
    { kind: FAILURE_KIND_VALUES },
  ),
  collectorInflight: spec(
    'gauge',
    'slurm_exporter_collector_inflight',
    '',
    COLLECTOR,
    'Runs of each sub-collector in progress.',
  ),
  collectorSkipped: spec(
    'counter',
    'slurm_exporter_collector_skipped',
    '',
    COLLECTOR,
    'Runs of each sub-collector skipped because its in-flight limit was reached.',
  ),
  collectorStaleResults: spec(
    'counter',
    'slurm_exporter_collector_stale_results',
    '',
    COLLECTOR,
    'Results of each sub-collector dropped because a newer result was already stored.',
  ),
  skippedItems: spec(
    'counter',
    'slurm_exporter_skipped_items',
    '',
    COLLECTOR,
    'Malformed nodes or jobs skipped while decoding a response (the rest of the response is kept).',
  ),
  apiErrors: spec(
    'counter',
    'slurm_exporter_api_errors',
    '',
    COLLECTOR,
    'Slurm errors[] carried by successful responses (the data in them is used; each message is logged once).',
  ),
  hostlistErrors: spec(
    'counter',
    'slurm_exporter_hostlist_errors',
    '',
    COLLECTOR,
    "Items whose hostlist cannot be expanded, per response (a job's nodes, a partition's or reservation's node list): the item is kept, without the series that need its hosts (each distinct list is logged once).",
  ),
  gresDetailErrors: spec(
    'counter',
    'slurm_exporter_gres_detail_errors',
    '',
    COLLECTOR,
    "Per-node entries of jobs' gres_detail that are in neither of Slurm's forms, per response: the job is kept, and so are the GPUs the rest of the entry names (each distinct entry is logged once).",
  ),
  boundedValues: spec(
    'counter',
    'slurm_exporter_bounded_label_values',
    '',
    COLLECTOR,
    'Label values read from the Kubernetes API (topology) that were cut to 256 bytes of UTF-8 or had control characters replaced before export, per response; logged when the count changes.',
  ),
  apiFieldsLost: spec(
    'counter',
    'slurm_exporter_api_fields_lost',
    '',
    COLLECTOR,
    'Fields that responses carried before slurmrestd was renegotiated to another API version and lack after it (named in the log).',
  ),
  metricsRequests: spec(
    'counter',
    'slurm_exporter_metrics_requests',
    '',
    [],
    'Requests served by the /metrics endpoint.',
  ),
  metricsExported: spec('gauge', 'slurm_exporter_metrics_exported', '', [], 'Points in the last published snapshot.'),
  otlpExports: closedValues(
    spec(
      'counter',
      'slurm_exporter_otlp_exports',
      '',
      ['result'],
      'OTLP push attempts by result: success (every point taken), failure (not delivered: refused, unreachable, timed out), rejected (answered, but the receiver refused some points: OTLP partial success).',
    ),
    { result: ['success', 'failure', 'rejected'] },
  ),
  otlpRejectedPoints: spec(
    'counter',
    'slurm_exporter_otlp_rejected_points',
    '',
    [],
    'Points an OTLP receiver refused in answers to pushes it otherwise took (partial success; the push counts as result="rejected").',
  ),
} as const;
