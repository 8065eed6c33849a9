/**
 * The Prometheus alert rules, declared once: `npm run docs` writes otel-config/prometheus/alerts.yml
 * and the threshold table and runbook of docs/operations.md from this file, and test/alerts checks both are
 * current. Prometheus rules have no variables, so every threshold lives in THRESHOLDS and each
 * expression takes it from there.
 */
import { stringify } from 'yaml';

export interface Threshold {
  readonly value: string | number;
  readonly meaning: string;
}

export const THRESHOLDS = {
  agentDownFor: { value: '5m', meaning: 'how long a self-monitoring endpoint may fail its scrape' },
  collectionWindow: { value: '10m', meaning: 'window in which an agent must have run at least one collection' },
  rateWindow: { value: '10m', meaning: 'window of every rate() and increase() below' },
  readErrorsFor: { value: '15m', meaning: 'how long node read errors must keep coming' },
  collectorFailingFor: { value: '10m', meaning: 'how long a cluster sub-collector must keep failing' },
  collectorSlowSeconds: {
    value: 30,
    meaning: 'duration of one sub-collector run (slurmrestd request and decoding) that counts as slow',
  },
  collectorSlowFor: { value: '10m', meaning: 'how long sub-collector runs must stay slow or skipped' },
  agentMemoryBytes: { value: 1073741824, meaning: 'resident memory of an agent process (1 GiB)' },
  agentMemoryFor: { value: '15m', meaning: 'how long an agent must stay above that memory' },
  otlpFailingFor: { value: '10m', meaning: 'how long OTLP pushes must keep failing' },
  attributionIncompleteFor: { value: '15m', meaning: 'how long ports of a node may stay without job attribution' },
  portDownFor: { value: '5m', meaning: 'how long an HCA port may stay not ACTIVE' },
  linkDownedWindow: { value: '15m', meaning: 'window in which any link_downed increment alerts' },
  physicalErrorsPerSecond: {
    value: 0.1,
    meaning: "physical-layer errors per second on a port (or on a job's sole port)",
  },
  rdmaErrorsPerSecond: { value: 10, meaning: 'RDMA retransmission and sequence errors per second on a port' },
  jobRdmaErrorsPerSecond: {
    value: 10,
    meaning: 'RDMA retransmission and sequence errors per second counted for one job on its sole port',
  },
  fabricErrorsFor: { value: '10m', meaning: 'how long fabric error rates must stay above their thresholds' },
  nodeDownFor: { value: '5m', meaning: 'how long a Slurm node may be DOWN, FAIL or NOT_RESPONDING' },
  drainingFor: { value: '12h', meaning: 'how long a Slurm node may carry the DRAIN flag' },
  unavailableFraction: { value: 0.1, meaning: "fraction of a cluster's nodes that may be unavailable" },
  unavailableFor: { value: '10m', meaning: 'how long that fraction may be exceeded' },
  rpcLatencySeconds: { value: 0.1, meaning: 'average time slurmctld spends per RPC' },
  serverThreads: { value: 200, meaning: 'slurmctld server threads in use (slurmctld caps them at 256)' },
  slurmctldFor: { value: '10m', meaning: 'how long slurmctld latency or thread count must stay high' },
  gpuUnheldFor: {
    value: '30m',
    meaning: 'how long GPUs Slurm allocated to a job on a node may go without any process of that job holding one',
  },
  cpuEfficiencyLow: {
    value: 0.1,
    meaning: "fraction of a job's allocated CPUs that its processes keep busy, below which it counts as underused",
  },
  cpuUnderusedFor: { value: '1h', meaning: 'how long a job may stay under that CPU efficiency' },
  memoryLimitFraction: {
    value: 0.95,
    meaning: "fraction of its cgroup's memory limit a job may reach on a node (page cache included)",
  },
  memoryNearLimitFor: { value: '5m', meaning: 'how long a job may stay at or above that fraction' },
  oomNewJobSeconds: {
    value: 1200,
    meaning:
      'age in seconds under which a job whose OOM-kill counter is already above 0 when first seen counts as just killed',
  },
} as const satisfies Record<string, Threshold>;

type Name = keyof typeof THRESHOLDS;
const T = (name: Name): string => String(THRESHOLDS[name].value);

/** Port counters that count physical-layer trouble (bad cable, transceiver or port). */
export const PHYSICAL_COUNTERS = [
  'symbol_error',
  'link_error_recovery',
  'port_rcv_errors',
  'local_link_integrity_errors',
  'excessive_buffer_overrun_errors',
];
/** hw_counters that count RDMA retransmissions and sequence errors (lost or reordered packets). */
export const RDMA_COUNTERS = [
  'packet_seq_err',
  'out_of_sequence',
  'local_ack_timeout_err',
  'implied_nak_seq_err',
  'req_transport_retries_exceeded',
];

export interface Alert {
  readonly alert: string;
  readonly expr: string;
  /** A THRESHOLDS name holding the duration, or none: fires at the first evaluation. */
  readonly for?: Name;
  readonly severity: 'warning' | 'critical';
  readonly summary: string;
  readonly description: string;
  readonly runbook: { readonly means: string; readonly check: string; readonly act: string };
}

/** A recording rule: a series computed from others, for alerts and dashboards to read by name. */
export interface RecordingRule {
  readonly record: string;
  readonly expr: string;
  readonly meaning: string;
}

export interface AlertGroup {
  readonly name: string;
  /** Evaluated before the group's alerts, in order, so an alert can read what they record. */
  readonly records?: readonly RecordingRule[];
  readonly rules: readonly Alert[];
}

const SELF_JOBS = 'job=~"slurm-otel-(node|cluster)-self"';
const rate = (selector: string): string => `rate(${selector}[${T('rateWindow')}])`;

const INCOMPLETE = 'max by (job, instance) (ib_slurm_port_attribution{status="incomplete"}) == 1';
const REASONS = [
  'label_replace(ib_slurm_unreadable_processes > 0, "reason", "processes unreadable ($1)", "scope", "(.+)")',
  'label_replace(ib_slurm_unresolved_allocations > 0, "reason", "job ids unresolved", "", "")',
  'label_replace(ib_slurm_cgroup_scan_found_slurm == 0, "reason", "no Slurm job cgroups found", "", "")',
];

const agents: AlertGroup = {
  name: 'slurm-otel-agents',
  rules: [
    {
      alert: 'SlurmOtelAgentDown',
      expr: `up{${SELF_JOBS}} == 0`,
      for: 'agentDownFor',
      severity: 'warning',
      summary: 'slurm-otel agent {{ $labels.instance }} ({{ $labels.job }}) does not answer',
      description:
        'Prometheus cannot scrape the self-monitoring endpoint of {{ $labels.instance }} ({{ $labels.job }}): the agent is stopped, crashed, or unreachable.',
      runbook: {
        means:
          'The agent process is not running or its monitoring port is unreachable. Its metrics stop, whichever path they take.',
        check:
          "`systemctl status slurm-otel-node` (or `-cluster`), `journalctl -u slurm-otel-node -n 100`, or the pod's status and logs; `curl -s http://HOST:9837/health` (8081 for the cluster agent).",
        act: 'Restart the agent; if it exits at start, its log names the bad flag or file. If it runs, check firewalls and the scrape target list.',
      },
    },
    {
      alert: 'SlurmOtelAgentNotCollecting',
      expr: `increase(ib_slurm_exporter_cycles_total[${T('collectionWindow')}]) == 0\nor increase(slurm_exporter_collection_attempts_total[${T('collectionWindow')}]) == 0`,
      for: 'agentDownFor',
      severity: 'critical',
      summary: 'slurm-otel agent {{ $labels.instance }} has run no collection for ' + T('collectionWindow'),
      description:
        'The agent on {{ $labels.instance }} ({{ $labels.job }}) answers but has started no collection cycle in ' +
        T('collectionWindow') +
        ': its exported data is stale and /health keeps the time of the last one.',
      runbook: {
        means:
          'The collection loop is stuck: a cycle never ends (a hung filesystem read on a node, a slurmrestd request that never returns) so no new one starts.',
        check:
          "`curl -s http://HOST:9837/health` shows the last collection time; the agent log shows the last cycle; on a node, look for processes in D state (`ps -eo pid,stat,wchan,cmd | awk '$2 ~ /D/'`).",
        act: 'Restart the agent to recover now; then find what blocked (NFS, a stuck /proc read, slurmrestd). Lower `--collection-interval` does not help.',
      },
    },
    {
      alert: 'SlurmOtelNodeReadErrors',
      expr: `sum by (job, instance, source, kind) (increase(ib_slurm_exporter_cycle_errors_total[${T('rateWindow')}])) > 0`,
      for: 'readErrorsFor',
      severity: 'warning',
      summary: 'node agent {{ $labels.instance }} keeps failing to read {{ $labels.source }} ({{ $labels.kind }})',
      description:
        'The node agent on {{ $labels.instance }} has counted {{ $labels.kind }} read errors on {{ $labels.source }} in every ' +
        T('rateWindow') +
        ' for ' +
        T('readErrorsFor') +
        '. What it could not read is missing from attribution.',
      runbook: {
        means:
          'The agent cannot read part of cgroupfs, /proc, sysfs or the job-id source: `denied` is a missing capability, `malformed` an unexpected file format, `io` a failing read or squeue call.',
        check:
          "The node's landing page (`http://HOST:9836/`) lists the gaps; `slurm-otel explain` on the node shows them; the agent log names each path.",
        act: '`denied`: give the agent CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH (see deploy/). `malformed`: report the file content. `io`: check squeue and the filesystems.',
      },
    },
    {
      alert: 'SlurmOtelCollectorFailing',
      expr: `sum by (job, instance, collector) (${rate('slurm_exporter_collector_errors_total')}) > 0`,
      for: 'collectorFailingFor',
      severity: 'warning',
      summary: 'cluster agent {{ $labels.instance }}: slurmrestd requests for {{ $labels.collector }} keep failing',
      description:
        'The {{ $labels.collector }} sub-collector of the cluster agent on {{ $labels.instance }} has failed runs for ' +
        T('collectorFailingFor') +
        ' (slurmrestd errors, timeouts or undecodable responses); its series keep the last good data.',
      runbook: {
        means:
          'slurmrestd answers with errors, times out, rejects the token, or returns what the agent cannot decode. The cluster metrics of that collector are frozen at the last good run.',
        check:
          "`slurm_exporter_collector_error_kinds_total` (label `kind`) says why (auth, timeout, network, http, decode, api_errors, ...); the cluster agent log (each failure is logged with the HTTP status or error); the landing page (`http://HOST:8080/`) shows which sub-collector failed; `curl` the same slurmrestd endpoint with the agent's token.",
        act: 'Fix slurmrestd or the token (expired, wrong user); if slurmctld is slow, raise `--request-timeout` or read jobs from slurmdbd.',
      },
    },
    {
      alert: 'SlurmOtelCollectorSlow',
      expr: `max by (job, instance, collector) (slurm_exporter_collector_duration_seconds) > ${T('collectorSlowSeconds')}\nor sum by (job, instance, collector) (increase(slurm_exporter_collector_skipped_total[${T('rateWindow')}])) > 0`,
      for: 'collectorSlowFor',
      severity: 'warning',
      summary: 'cluster agent {{ $labels.instance }}: slurmrestd is slow for {{ $labels.collector }}',
      description:
        'Runs of the {{ $labels.collector }} sub-collector on {{ $labels.instance }} take over ' +
        T('collectorSlowSeconds') +
        ' s or are skipped because earlier runs are still in flight, for ' +
        T('collectorSlowFor') +
        '.',
      runbook: {
        means:
          'slurmrestd (and behind it slurmctld or slurmdbd) answers slowly; runs pile up until the in-flight limit skips new ones, so data gets older.',
        check:
          "`slurm_exporter_collector_duration_seconds` by collector; slurmctld load (`sdiag`, the RPC latency alert); slurmrestd's own log and thread count.",
        act: 'Raise the collection interval, read jobs from slurmdbd (`--job-source accounting`), or give slurmrestd more threads. Skipped runs are harmless by themselves.',
      },
    },
    {
      alert: 'SlurmOtelAgentMemoryHigh',
      expr: `max by (job, instance) (process_resident_memory_bytes{${SELF_JOBS}}) > ${T('agentMemoryBytes')}`,
      for: 'agentMemoryFor',
      severity: 'warning',
      summary: 'slurm-otel agent {{ $labels.instance }} uses {{ $value | humanize1024 }}B of memory',
      description:
        'The agent on {{ $labels.instance }} ({{ $labels.job }}) has had over ' +
        T('agentMemoryBytes') +
        ' bytes resident for ' +
        T('agentMemoryFor') +
        '.',
      runbook: {
        means:
          'The agent holds more than expected: very many jobs or series (the cluster agent at 100k jobs), or a leak.',
        check:
          '`nodejs_heap_size_used_bytes` and the series count (`ib_slurm_exporter_series_exported`, `slurm_exporter_metrics_exported`) on the same instance: memory that grows with series is load, memory that grows alone is a leak.',
        act: 'For load: raise the container limit or read fewer jobs (accounting lookback). For a leak: restart the agent and report the growth curve.',
      },
    },
    {
      alert: 'SlurmOtelOtlpExportFailing',
      // Both agents count their pushes the same way, each under its own prefix; a push the receiver
      // answered while refusing some of its points (OTLP partial success) lost data too.
      expr: `sum by (job, instance) (${rate('ib_slurm_exporter_otlp_exports_total{result=~"failure|rejected"}')} or ${rate('slurm_exporter_otlp_exports_total{result=~"failure|rejected"}')}) > 0`,
      for: 'otlpFailingFor',
      severity: 'warning',
      summary: 'agent {{ $labels.job }} on {{ $labels.instance }} cannot push OTLP',
      description:
        'OTLP pushes from {{ $labels.job }} on {{ $labels.instance }} have failed or been partly refused for ' +
        T('otlpFailingFor') +
        ': the store misses metrics from that agent on the push path.',
      runbook: {
        means:
          'The agent cannot reach the OpenTelemetry Collector, or the collector refuses the data (memory_limiter, auth, TLS); `result="rejected"`: the receiver took the pushes but refused some of their points (OTLP partial success), counted in `ib_slurm_exporter_otlp_rejected_points_total` / `slurm_exporter_otlp_rejected_points_total`.',
        check:
          "The agent log (failed and partly refused pushes are logged once a minute, with the error and how many were not logged: a 401 is the bearer token, refused before the collector counts anything); the collector's health and `otelcol_receiver_refused_metric_points`; `curl -v` the OTLP endpoint from the agent's host.",
        act: "Fix the endpoint, TLS or headers (`--otlp-*` / `OTEL_EXPORTER_OTLP_*`); for a 401, put the token of the agent's `--otlp-bearer-token-file` into the collector's `OTLP_TOKEN_FILE` (deploy/README.md, bearer tokens); or scale the gateway. The agent retries at every interval and reads a changed token file itself; nothing needs a restart.",
      },
    },
    {
      alert: 'SlurmOtelCollectorExportFailing',
      expr: `sum by (job, instance, exporter) (rate({__name__=~"otelcol_exporter_send_failed_metric_points(_total)?"}[${T('rateWindow')}])) > 0`,
      for: 'otlpFailingFor',
      severity: 'warning',
      summary: 'OpenTelemetry Collector {{ $labels.instance }} fails to send metrics through {{ $labels.exporter }}',
      // Also the node-local Collector's otlp_grpc exporter: a request the gateway refuses as too
      // large is not retryable and is dropped there, and the gateway counts nothing.
      description:
        'The collector {{ $labels.instance }} has failed to send metric points through its {{ $labels.exporter }} exporter for ' +
        T('otlpFailingFor') +
        ': pushed agent metrics are being dropped.',
      runbook: {
        means:
          "A collector drops the agents' metrics: the gateway cannot write them to the store (remote write refused, store down, network), or a node-local collector (exporter `otlp_grpc`) cannot forward them to the gateway (gateway down past the retry time, a request over the gateway's gRPC size limit, or a bearer token the gateway does not list: both dropped at once).",
        check:
          'The collector log (`message larger than max` names a size mismatch, `code = Unauthenticated` the token); `otelcol_exporter_queue_size`; the store\'s ingestion errors (Prometheus: `prometheus_http_requests_total{handler="/api/v1/write"}` by code).',
        act: "Fix the store or its URL and credentials; raise the exporter queue if the outage is short and expected. For a size mismatch: keep the node-local collector's `sending_queue.batch.max_size` under the gateway's `max_recv_msg_size_mib` (otel-config/ ships them matched). For `Unauthenticated`: put the node's `OTLP_TOKEN_FILE` token into the gateway's `OTLP_TOKEN_FILE` and restart the node-local collector (it reads its forwarding token at start).",
      },
    },
    {
      alert: 'SlurmOtelCollectorRefusing',
      expr: `sum by (job, instance, receiver) (rate({__name__=~"otelcol_receiver_refused_metric_points(_total)?"}[${T('rateWindow')}])) > 0`,
      for: 'otlpFailingFor',
      severity: 'warning',
      summary: 'OpenTelemetry Collector {{ $labels.instance }} refuses metrics on {{ $labels.receiver }}',
      description:
        'The collector {{ $labels.instance }} has refused metric points pushed to its {{ $labels.receiver }} receiver for ' +
        T('otlpFailingFor') +
        ': the senders must retry them or lose them.',
      runbook: {
        means:
          'A pipeline behind the receiver said no: usually the memory_limiter (memory near its limit), or an exporter whose queue is full.',
        check:
          "`otelcol_processor_memory_limiter_refused_metric_points` and the collector's memory; `otelcol_exporter_queue_size` against `otelcol_exporter_queue_capacity`; the senders' failure counters.",
        act: 'Scale the gateway out (more replicas) or give it more memory; fix the store if the exporter queue is full because it cannot write.',
      },
    },
  ],
};

const fabric: AlertGroup = {
  name: 'slurm-otel-fabric',
  rules: [
    {
      alert: 'IbAttributionIncomplete',
      expr: `max by (job, instance, reason) (\n  ${REASONS.join('\n  or ')}\n)\n* on (job, instance) group_left () (${INCOMPLETE})\nor label_replace(\n  (${INCOMPLETE})\n  unless on (job, instance) (ib_slurm_unreadable_processes > 0 or ib_slurm_unresolved_allocations > 0 or ib_slurm_cgroup_scan_found_slurm == 0),\n  "reason", "other gap (see the node's landing page)", "", ""\n)`,
      for: 'attributionIncompleteFor',
      severity: 'warning',
      summary: 'node {{ $labels.instance }}: job attribution incomplete ({{ $labels.reason }})',
      description:
        'Ports on {{ $labels.instance }} have had status "incomplete" for ' +
        T('attributionIncompleteFor') +
        ' because of: {{ $labels.reason }}. They export device series only; no job gets their traffic.',
      runbook: {
        means:
          "The agent could not see everything it needs to name a port's sole job (fail-safe: no job series rather than a wrong one). The reason label says what was missing.",
        check:
          'The node\'s landing page (`http://HOST:9836/`) or `slurm-otel explain` on the node lists the gaps; `ib_slurm_port_attribution{status="incomplete"}` shows which ports.',
        act: '`processes unreadable (job)` or `(outside)`: grant CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH (and hostPID in Kubernetes); if the unreadable processes outside jobs never hold an HCA, `--unreadable-processes ignore-outside-jobs` stops them suppressing attribution. `job ids unresolved`: make squeue reachable or check the SLUID lookup. `no Slurm job cgroups found`: point `--cgroup-root` at the real cgroup mount.',
      },
    },
    {
      alert: 'IbPortDown',
      expr: 'max by (job, instance, device, port) (ib_slurm_device_port_up) == 0',
      for: 'portDownFor',
      severity: 'critical',
      summary: 'HCA port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.instance }} is down',
      description:
        'Port {{ $labels.port }} of {{ $labels.device }} on {{ $labels.instance }} has not been ACTIVE for ' +
        T('portDownFor') +
        '.',
      runbook: {
        means:
          'The port lost its link or was never brought up: jobs on that node lose (or never get) fabric bandwidth through it.',
        check:
          '`ib_slurm_device_port_physical_state` of the port (2: Polling, no cable or no peer; 3: Disabled; 5: LinkUp but not ACTIVE, a subnet manager problem); `ibstat` on the node; the switch port; `ib_slurm_device_counters_total{counter="link_downed"}`.',
        act: 'Reseat or replace the cable or transceiver; drain the node (`scontrol update nodename=... state=drain reason="IB port down"`) until it is fixed. A port that is never cabled should be left out with relabeling or silenced.',
      },
    },
    {
      alert: 'IbLinkDowned',
      expr: `sum by (job, instance, device, port) (increase(ib_slurm_device_counters_total{counter="link_downed"}[${T('linkDownedWindow')}])) > 0`,
      severity: 'warning',
      summary: 'HCA port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.instance }} lost its link',
      description:
        'link_downed of {{ $labels.device }}/{{ $labels.port }} on {{ $labels.instance }} rose in the last ' +
        T('linkDownedWindow') +
        ': the link went down and retrained.',
      runbook: {
        means:
          'The link dropped and came back: RDMA connections over it may have failed, and jobs may have crashed or stalled.',
        check:
          'The physical error counters of the same port (symbol_error, link_error_recovery); the switch side; `dmesg` on the node for mlx5 port events.',
        act: 'One event after maintenance is expected; repeated ones mean a bad cable or transceiver: replace it and drain the node meanwhile.',
      },
    },
    {
      alert: 'IbPhysicalErrors',
      expr: `sum by (job, instance, device, port) (${rate(`ib_slurm_device_counters_total{counter=~"${PHYSICAL_COUNTERS.join('|')}"}`)}) > ${T('physicalErrorsPerSecond')}`,
      for: 'fabricErrorsFor',
      severity: 'warning',
      summary: 'physical-layer errors rising on {{ $labels.device }}/{{ $labels.port }} ({{ $labels.instance }})',
      description:
        'Symbol, link-recovery, receive or integrity errors on {{ $labels.device }}/{{ $labels.port }} of {{ $labels.instance }} run at {{ $value | printf "%.3g" }}/s, over ' +
        T('physicalErrorsPerSecond') +
        '/s for ' +
        T('fabricErrorsFor') +
        '.',
      runbook: {
        means:
          'The link is degraded: bit errors on the cable, transceiver or port. It may still be up, but packets are corrupted and retried.',
        check:
          '`ib_slurm_device_counters_total{counter=~"symbol_error|link_error_recovery|port_rcv_errors"}` by port; the switch port\'s counters; `mlxlink -d DEVICE` for the eye and BER.',
        act: 'Replace the cable or transceiver at the next opportunity; drain the node if the rate keeps growing or jobs on it slow down.',
      },
    },
    {
      alert: 'IbRdmaErrors',
      expr: `sum by (job, instance, device, port) (${rate(`ib_slurm_device_counters_total{counter=~"${RDMA_COUNTERS.join('|')}"}`)}) > ${T('rdmaErrorsPerSecond')}`,
      for: 'fabricErrorsFor',
      severity: 'warning',
      summary: 'RDMA retransmissions rising on {{ $labels.device }}/{{ $labels.port }} ({{ $labels.instance }})',
      description:
        'Sequence errors, out-of-sequence packets and ACK timeouts on {{ $labels.device }}/{{ $labels.port }} of {{ $labels.instance }} run at {{ $value | printf "%.3g" }}/s, over ' +
        T('rdmaErrorsPerSecond') +
        '/s for ' +
        T('fabricErrorsFor') +
        '.',
      runbook: {
        means:
          'Packets are lost or reordered on the way: congestion, a bad link elsewhere in the path, or adaptive-routing reordering. Collective operations slow down.',
        check:
          'Which jobs hold the port: `ib_slurm_device_jobs` and the "Fabric by job" dashboard; the physical errors of the ports on the path; congestion counters (`np_cnp_sent`, `rp_cnp_handled`, `port_xmit_wait`).',
        act: 'If one port has physical errors, fix that link. If many ports rise together, look at the fabric (UFM, switch congestion). Tell the job owners if their jobs are the cause.',
      },
    },
    {
      alert: 'IbJobRdmaErrors',
      expr: `sum by (job, instance, job_id, device, port) (${rate(`ib_slurm_job_counters_total{counter=~"${RDMA_COUNTERS.join('|')}"}`)}) > ${T('jobRdmaErrorsPerSecond')}`,
      for: 'fabricErrorsFor',
      severity: 'warning',
      summary:
        'job {{ $labels.job_id }}: RDMA retransmissions rising on {{ $labels.device }}/{{ $labels.port }} ({{ $labels.instance }})',
      description:
        'Job {{ $labels.job_id }} is the sole user of {{ $labels.device }}/{{ $labels.port }} on {{ $labels.instance }}, where its RDMA sequence errors and ACK timeouts run at {{ $value | printf "%.3g" }}/s for ' +
        T('fabricErrorsFor') +
        '.',
      runbook: {
        means:
          "The job's own traffic meets packet loss or reordering: the job is slowed by the fabric, or its pattern congests it.",
        check:
          '`slurm_job_info{job_id="..."}` for owner and name; the same counters on the job\'s other nodes (the "Fabric by job" dashboard); physical errors on this port.',
        act: "If only this node's port shows it, treat it as a link problem (IbPhysicalErrors). If all the job's ports do, tell the owner and look at fabric congestion.",
      },
    },
    {
      alert: 'IbJobLinkErrors',
      expr: `sum by (job, instance, job_id, device, port) (${rate(`ib_slurm_job_counters_total{counter=~"${PHYSICAL_COUNTERS.join('|')}"}`)}) > ${T('physicalErrorsPerSecond')}`,
      for: 'fabricErrorsFor',
      severity: 'warning',
      summary:
        'job {{ $labels.job_id }} runs on a bad link: {{ $labels.device }}/{{ $labels.port }} ({{ $labels.instance }})',
      description:
        'Physical-layer errors climb at {{ $value | printf "%.3g" }}/s on {{ $labels.device }}/{{ $labels.port }} of {{ $labels.instance }} while job {{ $labels.job_id }} is its sole user, for ' +
        T('fabricErrorsFor') +
        '.',
      runbook: {
        means:
          'The job is the only user of a port whose link is degrading: its performance suffers, and it is the one job to warn.',
        check:
          'IbPhysicalErrors for the same port; `slurm_job_info{job_id="..."}` for the owner; how long the job still runs (`slurm_job_duration_seconds`).',
        act: 'Drain the node so no new job lands there; let or ask the owner to requeue the job if it is slowed; fix the link once it is empty.',
      },
    },
  ],
};

const NODE_LABELS = 'job, instance, node_name, reason';
const slurm: AlertGroup = {
  name: 'slurm-otel-slurm',
  rules: [
    {
      alert: 'SlurmNodeDown',
      expr: `max by (${NODE_LABELS}) (\n  slurm_node_info{state_base="DOWN", state_is_powered_down!="true", state_is_powering_up!="true"}\n  or slurm_node_info{state_is_fail="true"}\n  or slurm_node_info{state_is_not_responding="true", state_is_powered_down!="true"}\n)`,
      for: 'nodeDownFor',
      severity: 'critical',
      summary: 'Slurm node {{ $labels.node_name }} is down, failed or not responding',
      description:
        'Slurm has reported {{ $labels.node_name }} DOWN, FAIL or NOT_RESPONDING for ' +
        T('nodeDownFor') +
        ' (reason: "{{ $labels.reason }}"). Powered-down cloud nodes are not counted.',
      runbook: {
        means:
          'slurmctld cannot use the node: slurmd stopped answering, the node crashed, or an admin set it down. Its jobs were requeued or failed.',
        check:
          "`scontrol show node NAME` (State, Reason, LastBusyTime); `systemctl status slurmd` and the node's console; the `slurm_node_fails_total` history.",
        act: 'Bring slurmd back and `scontrol update nodename=NAME state=resume`; if the hardware failed, keep it down with a reason and open a repair ticket.',
      },
    },
    {
      alert: 'SlurmNodeDrainingLong',
      expr: `max by (${NODE_LABELS}) (slurm_node_info{state_is_drain="true"})`,
      for: 'drainingFor',
      severity: 'warning',
      summary: 'Slurm node {{ $labels.node_name }} has been draining for over ' + T('drainingFor'),
      description:
        '{{ $labels.node_name }} has carried the DRAIN flag for ' +
        T('drainingFor') +
        ' (reason: "{{ $labels.reason }}"): it takes no new jobs.',
      runbook: {
        means: 'A drain set for maintenance or by a health check was never resumed: capacity is lost.',
        check: '`sinfo -R` (reason, who, when); whether the repair it waited for is done.',
        act: 'Resume it (`scontrol update nodename=NAME state=resume`) or turn it into a tracked repair; do not leave nodes drained without an owner.',
      },
    },
    {
      alert: 'SlurmManyNodesUnavailable',
      expr: `sum by (job, instance) (slurm_node_info{is_unavailable="true"})\n/ count by (job, instance) (slurm_node_info)\n> ${T('unavailableFraction')}`,
      for: 'unavailableFor',
      severity: 'critical',
      summary: '{{ $value | humanizePercentage }} of the Slurm nodes seen by {{ $labels.instance }} are unavailable',
      description:
        'More than ' +
        T('unavailableFraction') +
        " of the cluster's nodes (as the cluster agent on {{ $labels.instance }} sees them) have been unavailable (down, drained, not responding, failed) for " +
        T('unavailableFor') +
        '.',
      runbook: {
        means:
          'A large part of the cluster cannot run jobs: a shared cause (switch, power, network to slurmctld, a bad config push) is likely.',
        check:
          '`sinfo -R` grouped by reason; `slurm_node_info{is_unavailable="true"}` by reason and partition; whether the nodes share a rack or leaf switch.',
        act: 'Fix the shared cause first; then resume the nodes in bulk (`scontrol update nodename=LIST state=resume`).',
      },
    },
    {
      alert: 'SlurmctldRpcLatencyHigh',
      expr: `sum by (job, instance) (${rate('slurm_controller_rpc_duration_seconds_total')})\n/ sum by (job, instance) (${rate('slurm_controller_rpc_calls_total')})\n> ${T('rpcLatencySeconds')}`,
      for: 'slurmctldFor',
      severity: 'warning',
      summary: 'slurmctld takes {{ $value | humanizeDuration }} per RPC on average',
      description:
        'slurmctld (seen by the cluster agent on {{ $labels.instance }}) has spent over ' +
        T('rpcLatencySeconds') +
        ' s per RPC on average for ' +
        T('slurmctldFor') +
        ': commands and job submissions are slow.',
      runbook: {
        means:
          'slurmctld is overloaded or blocked (slow StateSaveLocation, slurmdbd backlog, a user flooding it with RPCs).',
        check:
          "`sdiag` (RPCs by type and by user, agent queue size); `slurm_controller_rpc_user_calls_total` rates for a flooding user; slurmctld's log for slow state saves.",
        act: 'Throttle the flooding user or script; move StateSaveLocation to fast storage; have monitoring read jobs from slurmdbd.',
      },
    },
    {
      alert: 'SlurmctldServerThreadsHigh',
      expr: `max by (job, instance) (slurm_controller_server_thread_count) > ${T('serverThreads')}`,
      for: 'slurmctldFor',
      severity: 'warning',
      summary: 'slurmctld runs {{ $value }} server threads',
      description:
        'slurmctld (seen by the cluster agent on {{ $labels.instance }}) has run more than ' +
        T('serverThreads') +
        ' server threads for ' +
        T('slurmctldFor') +
        '; at its cap it queues and then rejects RPCs.',
      runbook: {
        means: 'RPCs arrive faster than slurmctld finishes them; near the cap, clients see "Socket timed out" errors.',
        check: '`sdiag` (server thread count, agent queue size, RPCs by user); the RPC latency alert.',
        act: 'As for SlurmctldRpcLatencyHigh: find the source of the RPC load and reduce it.',
      },
    },
  ],
};

/**
 * The node agent's series carry the node as `instance` (its host.name); the cluster agent's carry
 * it as `node_name`. Both carry `slurm_cluster` where the gateway adds it.
 */
const asNodeName = (expr: string): string => `label_replace(${expr}, "node_name", "$1", "instance", "(.*)")`;
const GPU_KEY = 'slurm_cluster, job_id, node_name';
/** Nodes whose node agent reports at all: elsewhere "none held" would only mean "not watched". */
const WATCHED_NODES = asNodeName('group by (slurm_cluster, instance) (ib_slurm_exporter_cycles_total)');

const gpus: AlertGroup = {
  name: 'slurm-otel-gpus',
  rules: [
    {
      alert: 'SlurmJobGpusUnused',
      expr:
        `group by (${GPU_KEY}) (slurm_job_gpu_allocated)\n` +
        `unless on (${GPU_KEY}) ${asNodeName('group by (slurm_cluster, job_id, instance) (ib_slurm_job_gpu_holder)')}\n` +
        `and on (slurm_cluster, node_name) ${WATCHED_NODES}`,
      for: 'gpuUnheldFor',
      severity: 'warning',
      summary: 'job {{ $labels.job_id }} holds none of the GPUs Slurm gave it on {{ $labels.node_name }}',
      description:
        'Slurm has allocated GPUs on {{ $labels.node_name }} to job {{ $labels.job_id }}, and for ' +
        T('gpuUnheldFor') +
        ' no process of the job there has held any of them open.',
      runbook: {
        means:
          "The GPUs are reserved and idle: the job runs on CPUs only there, waits on something, or asked for more GPUs (or nodes) than it uses. Allocation comes from the cluster agent (`slurm_job_gpu_allocated`, from the job's gres_detail); holders come from the node agent's GPU attribution (`ib_slurm_job_gpu_holder`: a series for each GPU the job's processes have open, 1 when attributed, 0 when shared; either counts as held), so a node agent without GPU attribution makes every GPU job look idle.",
        check:
          '`slurm_job_info{job_id="..."}` for owner and name; `scontrol show job -d ID` (GRES per node); on the node, the job\'s processes (`ib_slurm_job_processes`) and `explain` for its GPUs.',
        act: 'Tell the owner: a job that does not use its GPUs should ask for none (or fewer nodes); cancel it if it holds scarce GPUs while stuck.',
      },
    },
  ],
};

const JOB = 'slurm_cluster, job_id';
const JOB_NODE = 'slurm_cluster, job_id, node_name';
const W = T('rateWindow');
/** Node-agent series of one family, per job and node (the node as `node_name`, as the cluster agent names it). */
const perJobNode = (agg: 'sum' | 'max', expr: string): string => `${agg} by (${JOB_NODE}) (${asNodeName(expr)})`;
/**
 * A per-job-and-node series summed over the job's nodes, only for jobs the cluster agent places
 * (`slurm_node_job`) and whose every node reports it: a job that one node agent does not watch
 * (agent down, usage off, job not seen yet) would otherwise look idle by the share it misses.
 */
const wholeJob = (perNode: string): string =>
  `(\n  sum by (${JOB}) (${perNode})\n  unless on (${JOB}) (group by (${JOB_NODE}) (slurm_node_job) unless on (${JOB_NODE}) ${perNode})\n  and on (${JOB}) slurm_node_job\n)`;

export const RECORDS = {
  nodeCpu: `slurm_job_node:cpu_seconds:rate${W}`,
  jobCpu: `slurm_job:cpu_seconds:rate${W}`,
  nodeCpus: 'slurm_job_node:cpus_allocated:max',
  nodeCpuEfficiency: `slurm_job_node:cpu_efficiency:rate${W}`,
  cpuEfficiency: `slurm_job:cpu_efficiency:rate${W}`,
  nodePeak: 'slurm_job_node:memory_peak_bytes:max',
  memoryEfficiency: 'slurm_job:memory_efficiency:ratio',
  nodeLimitUsed: 'slurm_job_node:memory_limit_used:ratio',
} as const;

const OOM = 'ib_slurm_job_oom_kills_total';

const jobUsage: AlertGroup = {
  name: 'slurm-otel-job-usage',
  records: [
    {
      record: RECORDS.nodeCpu,
      expr: perJobNode(
        'sum',
        `rate(ib_slurm_job_cpu_user_seconds_total[${W}]) + rate(ib_slurm_job_cpu_system_seconds_total[${W}])`,
      ),
      meaning:
        'CPUs the job keeps busy on a node (user and system CPU-seconds per second of its cgroup), from the node agent.',
    },
    {
      record: RECORDS.jobCpu,
      expr: wholeJob(RECORDS.nodeCpu),
      meaning:
        "CPUs the job keeps busy on all its nodes; only for jobs whose every node (as `slurm_node_job` lists them) reports the job's CPU time.",
    },
    {
      record: RECORDS.nodeCpus,
      expr: perJobNode('max', 'ib_slurm_job_cpus_allocated > 0'),
      meaning:
        "CPUs Slurm gave the job on a node, counted in the job's cpuset there by the node agent; only where Slurm constrains cores (ConstrainCores=yes).",
    },
    {
      record: RECORDS.nodeCpuEfficiency,
      expr: `${RECORDS.nodeCpu}\n/ on (${JOB_NODE}) ${RECORDS.nodeCpus}`,
      meaning:
        "CPU efficiency of the job on one node: busy CPUs there ÷ the CPUs of its cpuset there; shows the idle node of a multi-node job. Only where the node agent counts the job's cpuset.",
    },
    {
      record: RECORDS.cpuEfficiency,
      expr:
        `(\n  ${RECORDS.jobCpu}\n  / on (${JOB}) ${wholeJob(RECORDS.nodeCpus).replaceAll('\n', '\n  ')}\n)\n` +
        `or\n(\n  ${RECORDS.jobCpu}\n  / on (${JOB}) max by (${JOB}) (slurm_job_cpus > 0)\n)`,
      meaning:
        "CPU efficiency: busy CPUs ÷ CPUs allocated to the job; 1 is every allocated CPU busy all the time. The CPUs are those of its cpusets, summed over its nodes, where every node's agent counts one; else Slurm's figure for the whole job (`slurm_job_cpus`). Over the whole run it is seff's CPU efficiency.",
    },
    {
      record: RECORDS.nodePeak,
      expr: perJobNode('max', 'ib_slurm_job_memory_peak_bytes'),
      meaning: "Highest memory charged to the job's cgroup on a node, page cache included.",
    },
    {
      record: RECORDS.memoryEfficiency,
      expr: `${wholeJob(RECORDS.nodePeak)}\n/ on (${JOB}) max by (${JOB}) (slurm_job_memory_bytes > 0)`,
      meaning:
        "Memory efficiency: the job's peaks on its nodes, summed, ÷ memory Slurm allocated to the job (`slurm_job_memory_bytes`); only where every node reports a peak.",
    },
    {
      record: RECORDS.nodeLimitUsed,
      expr: `${perJobNode('max', 'ib_slurm_job_memory_used_bytes')}\n/ ${perJobNode('max', 'ib_slurm_job_memory_limit_bytes > 0')}`,
      meaning:
        "Memory charged to the job's cgroup on a node ÷ that cgroup's limit (Slurm's allocation there, with ConstrainRAMSpace); page cache included.",
    },
  ],
  rules: [
    {
      alert: 'SlurmJobCpuUnderused',
      expr: `${RECORDS.cpuEfficiency} < ${T('cpuEfficiencyLow')}`,
      for: 'cpuUnderusedFor',
      severity: 'warning',
      summary: 'job {{ $labels.job_id }} keeps {{ $value | humanizePercentage }} of its allocated CPUs busy',
      description:
        'For ' +
        T('cpuUnderusedFor') +
        ', the processes of job {{ $labels.job_id }} on all its nodes have used less than ' +
        T('cpuEfficiencyLow') +
        ' of the CPUs Slurm allocated to it.',
      runbook: {
        means:
          'The job holds CPUs it does not use: it asked for more cores than it runs threads or ranks, waits on I/O or on another job, or is an idle interactive session. Busy CPUs come from the job cgroups on each node (user and system time), allocation from the cluster agent (`slurm_job_cpus`); the figure exists only while every node of the job reports it.',
        check:
          '`slurm_job_info{job_id="..."}` for owner and name; `' +
          RECORDS.nodeCpu +
          '` by node (one busy node and idle others: a multi-node job that runs on one node); `ib_slurm_job_cpu_throttled_seconds_total` (a throttled job is not idle); `scontrol show job ID` (NumCPUs, cpus per task).',
        act: 'Tell the owner: ask for the cores the program uses (`--ntasks`, `--cpus-per-task`), or fewer nodes; cancel an interactive session left idle if the site allows it.',
      },
    },
    {
      alert: 'SlurmJobMemoryNearLimit',
      expr: `${RECORDS.nodeLimitUsed} >= ${T('memoryLimitFraction')}`,
      for: 'memoryNearLimitFor',
      severity: 'warning',
      summary:
        'job {{ $labels.job_id }} is at {{ $value | humanizePercentage }} of its memory limit on {{ $labels.node_name }}',
      description:
        'The memory charged to job {{ $labels.job_id }} on {{ $labels.node_name }} has been at or above ' +
        T('memoryLimitFraction') +
        ' of its cgroup limit for ' +
        T('memoryNearLimitFor') +
        '.',
      runbook: {
        means:
          'The job is about to be OOM-killed on that node, or it holds page cache up to its limit: the charge (`ib_slurm_job_memory_used_bytes`) counts the file pages the job read or wrote, which the kernel reclaims before it kills. A job that streams files can sit here harmlessly; SlurmJobOomKilled is the hard signal.',
        check:
          '`ib_slurm_job_memory_used_bytes` against `ib_slurm_job_memory_limit_bytes` over time (a steady climb is the job, a flat line at the limit is often cache); `ib_slurm_job_oom_kills_total`; on the node, `memory.stat` of the job cgroup (anon against file); `sstat -j ID --format=MaxRSS`.',
        act: 'If anon memory fills the limit, tell the owner to ask for more (`--mem`, `--mem-per-cpu`) before the job is killed; if it is page cache, nothing is wrong.',
      },
    },
    {
      alert: 'SlurmJobOomKilled',
      // The second branch catches a kill before the agent's first reading of the job (a job that
      // asked for too little memory dies in its first seconds): the counter appears above 0, and
      // increase() sees no rise. The age bound keeps an old kill from alerting again when an
      // agent restarts or usage is turned on.
      expr:
        `${perJobNode('sum', `increase(${OOM}[${W}])`)} > 0\n` +
        `or ${perJobNode('sum', `(${OOM} > 0 unless ${OOM} offset ${W}) and on (${JOB}) (slurm_job_duration_seconds < ${T('oomNewJobSeconds')})`)}`,
      severity: 'warning',
      summary: 'the OOM killer killed processes of job {{ $labels.job_id }} on {{ $labels.node_name }}',
      description:
        "The kernel's OOM killer killed processes in the cgroup of job {{ $labels.job_id }} on {{ $labels.node_name }} in the last " +
        W +
        ': the job reached its memory limit there.',
      runbook: {
        means:
          "A process of the job asked for memory beyond what its cgroup allows (Slurm's allocation on that node, with ConstrainRAMSpace). Slurm usually ends the step as OUT_OF_MEMORY; a job that catches the loss of a worker may go on degraded.",
        check:
          '`slurm_job_info{job_id="..."}` for owner and state; `sacct -j ID --format=JobID,State,ReqMem,MaxRSS`; `dmesg` or the journal on the node ("Memory cgroup out of memory" names the process); the memory panels of the job before the kill.',
        act: "Tell the owner to request more memory or use less per node (more nodes, smaller batches). Repeated kills of many jobs on one node can also mean the node's RealMemory is set too high for what it has.",
      },
    },
  ],
};

/** Where the rule file lives, from the repository root. */
export const ALERT_RULES_FILE = 'otel-config/prometheus/alerts.yml';

export const ALERT_GROUPS: readonly AlertGroup[] = [agents, fabric, slurm, gpus, jobUsage];

const HEADER = `# Prometheus alert and recording rules for slurm-otel: GENERATED by \`npm run docs\` from scripts/alerts.ts
# (thresholds and runbook are there and in docs/operations.md, "Alerts and runbook"); do not edit.
# Loaded by otel-config/prometheus.yml (rule_files); unit tests in alerts.test.yml
# (\`promtool test rules otel-config/prometheus/alerts.test.yml\`).
`;

/** The rule file's YAML. */
export function renderAlertRules(): string {
  const groups = ALERT_GROUPS.map((g) => ({
    name: g.name,
    rules: [
      ...(g.records ?? []).map((r) => ({ record: r.record, expr: r.expr })),
      ...g.rules.map((r) => ({
        alert: r.alert,
        expr: r.expr,
        ...(r.for ? { for: T(r.for) } : {}),
        labels: { severity: r.severity },
        annotations: { summary: r.summary, description: r.description },
      })),
    ],
  }));
  return HEADER + stringify({ groups }, { lineWidth: 0 });
}

/** The threshold table of docs/operations.md, and the counter sets the fabric alerts sum. */
export function thresholdsTable(): string {
  const rows = Object.entries(THRESHOLDS).map(([name, t]) => `| \`${name}\` | ${t.value} | ${t.meaning} |`);
  const list = (names: readonly string[]): string => names.map((n) => `\`${n}\``).join(', ');
  return [
    '| threshold | value | meaning |',
    '|---|---|---|',
    ...rows,
    '',
    `Physical-layer counters: ${list(PHYSICAL_COUNTERS)}.`,
    `RDMA retransmission and sequence counters: ${list(RDMA_COUNTERS)}.`,
  ].join('\n');
}

export function runbook(): string {
  return ALERT_GROUPS.flatMap((g) => g.rules)
    .map((r) =>
      [
        `#### ${r.alert}`,
        '',
        `*${r.severity}* — ${r.runbook.means}`,
        '',
        `- **Check:** ${r.runbook.check}`,
        `- **Act:** ${r.runbook.act}`,
      ].join('\n'),
    )
    .join('\n\n');
}

/** Every recording rule. */
export const RECORDING_RULES: readonly RecordingRule[] = ALERT_GROUPS.flatMap((g) => g.records ?? []);

/** The recording rules as the node agent's page quotes them: name, meaning and PromQL. */
export function recordingRulesDoc(): string {
  return RECORDING_RULES.map((r) =>
    [`- \`${r.record}\`: ${r.meaning}`, '', '  ```promql', ...r.expr.split('\n').map((l) => `  ${l}`), '  ```'].join(
      '\n',
    ),
  ).join('\n');
}
