/**
 * The node agent's metric families, declared once. The README tables and the
 * tests are checked against this list; the exposition is built from it.
 */
import {
  checkCatalogue,
  closedValues,
  defineMetric,
  optionalLabels,
  switchedBy,
  type MetricKind,
} from '../telemetry/spec.js';

const DP = ['device', 'port'] as const;
/** A GPU unit as DCGM exporter labels a GPU (UUID, pci_bus_id, device, GPU_I_ID), plus the MIG compute instance. */
export const GPU_LABELS = ['UUID', 'pci_bus_id', 'device', 'GPU_I_ID', 'compute_instance'] as const;

/** A (GPU, HCA) pair: the GPU as the GPU families name it (UUID, pci_bus_id), the HCA as the ports do (device). */
export const LOCALITY_LABELS = ['UUID', 'pci_bus_id', 'device', 'relation'] as const;

/** Labels --job-metadata adds to every point of the job families (empty while a job's are unknown). */
export const JOB_METADATA_LABELS = ['user_name', 'account', 'slurm_partition'] as const;

/** Why a port has or lacks job series (attribution.ts decides). */
export const PORT_STATUS_VALUES = ['sole', 'shared', 'idle', 'nonjob', 'incomplete'] as const;
/** A GPU's, the same as a port's, or held only by a job Slurm did not give it to. */
export const GPU_STATUS_VALUES = [...PORT_STATUS_VALUES, 'unallocated'] as const;
/** A (GPU, HCA) pair's place in the PCI tree, as nvidia-smi topo -m names it, or unknown. */
export const RELATION_VALUES = ['PIX', 'PXB', 'PHB', 'NODE', 'SYS', 'unknown'] as const;
const BOOLEAN_VALUES = ['true', 'false'] as const;

const spec = defineMetric;

/** A job family: with --job-metadata its points also carry the job's user, account and partition. */
function jobSpec<K extends MetricKind, const L extends string>(
  kind: K,
  name: string,
  unit: string,
  attributes: readonly L[],
  description: string,
) {
  return optionalLabels(defineMetric(kind, name, unit, attributes, description), JOB_METADATA_LABELS, '--job-metadata');
}

/** A job family read from per-PID QP counters: off unless --qp-counters reads them. */
function qpSpec<K extends MetricKind, const L extends string>(
  kind: K,
  name: string,
  unit: string,
  attributes: readonly L[],
  description: string,
) {
  return switchedBy(jobSpec(kind, name, unit, attributes, description), { option: '--qp-counters', value: 'observe' });
}

/** A job family read from the job cgroup's usage files: on unless --job-usage is off. */
function usageSpec<K extends MetricKind, const L extends string>(
  kind: K,
  name: string,
  unit: string,
  attributes: readonly L[],
  description: string,
) {
  return switchedBy(jobSpec(kind, name, unit, attributes, description), {
    option: '--job-usage',
    value: 'on',
    byDefault: true,
  });
}

export const NODE_METRICS = {
  deviceCounters: spec(
    'counter',
    'ib_slurm_device_counters',
    '',
    [...DP, 'counter'],
    'Raw value of every HCA port counter in sysfs counters/, hw_counters/ and counters_ext/, named by its file (port_xmit_data and port_rcv_data count 4-octet words; counters_ext/ files such as port_rcv_data_64 keep their own names).',
  ),
  deviceTransmitBytes: spec(
    'counter',
    'ib_slurm_device_transmit_bytes',
    'By',
    DP,
    'Bytes transmitted by the port: counters/port_xmit_data × 4 (counters_ext/port_xmit_data_64 × 4 only when counters/ lacks the file).',
  ),
  deviceReceiveBytes: spec(
    'counter',
    'ib_slurm_device_receive_bytes',
    'By',
    DP,
    'Bytes received by the port: counters/port_rcv_data × 4 (counters_ext/port_rcv_data_64 × 4 only when counters/ lacks the file).',
  ),
  jobCounters: jobSpec(
    'counter',
    'ib_slurm_job_counters',
    '',
    ['job_id', ...DP, 'counter'],
    'Increase of each port counter while the job was the sole user of the device, from 0 when it became the sole user.',
  ),
  jobTransmitBytes: jobSpec(
    'counter',
    'ib_slurm_job_transmit_bytes',
    'By',
    ['job_id', ...DP],
    'Bytes transmitted by the port while the job was its sole user.',
  ),
  jobReceiveBytes: jobSpec(
    'counter',
    'ib_slurm_job_receive_bytes',
    'By',
    ['job_id', ...DP],
    'Bytes received by the port while the job was its sole user.',
  ),
  deviceJobs: spec(
    'gauge',
    'ib_slurm_device_jobs',
    '',
    DP,
    'Number of Slurm jobs holding the device (resolved or not); 0 is a real zero.',
  ),
  portAttribution: closedValues(
    spec(
      'gauge',
      'ib_slurm_port_attribution',
      '',
      [...DP, 'status'],
      'Why a port has or lacks job series: status is sole, shared, idle, nonjob (a process outside Slurm holds it) or incomplete (the agent could not see everything).',
    ),
    { status: PORT_STATUS_VALUES },
  ),
  gpuAttribution: closedValues(
    spec(
      'gauge',
      'ib_slurm_gpu_attribution',
      '',
      [...GPU_LABELS, 'status'],
      'Why a GPU (or, with MIG on, a compute instance: GPU_I_ID and compute_instance set) has or lacks a job: status is sole, shared, idle, nonjob or incomplete, under the same rules as a port, or unallocated (its only holder is a job Slurm did not give it to: not attributed); one series per status, 1 for the current one. Labels as DCGM exporter gives them (UUID, pci_bus_id in its 00000000:BB:DD.F form, device nvidia<minor>).',
    ),
    { status: GPU_STATUS_VALUES },
  ),
  jobGpuHolder: jobSpec(
    'gauge',
    'ib_slurm_job_gpu_holder',
    '',
    ['job_id', ...GPU_LABELS],
    'A job holding a GPU (or MIG compute instance) by an fd of its processes: 1 when it is the sole holder (attributed), 0 when it holds it but attribution is suppressed. Join DCGM series on UUID with == 1.',
  ),
  gpuHcaLocality: closedValues(
    spec(
      'gauge',
      'ib_slurm_gpu_hca_locality',
      '',
      [...LOCALITY_LABELS, 'gpu_numa_node', 'hca_numa_node'],
      'Where a GPU and an HCA sit relative to each other in the PCI tree, one series per (GPU, HCA) pair, always 1: relation as nvidia-smi topo -m names it (PIX one PCIe switch between, PXB several, PHB through the host bridge, NODE across host bridges of one NUMA node, SYS across NUMA nodes) or unknown (different host bridges and a NUMA node sysfs does not give). UUID and pci_bus_id as on the GPU families, device the HCA as on the port families; NUMA nodes from sysfs numa_node (empty when unknown).',
    ),
    { relation: RELATION_VALUES },
  ),
  jobGpuHcaLocality: closedValues(
    jobSpec(
      'gauge',
      'ib_slurm_job_gpu_hca_locality',
      '',
      ['job_id', ...LOCALITY_LABELS],
      'A (GPU, HCA) pair a job holds both of through its processes, with their relation (as ib_slurm_gpu_hca_locality): 1 when the job is the sole holder of both (attributed), 0 when it holds both but either is shared or suppressed. A job whose relation is SYS or NODE runs its RDMA through an HCA far from its GPU.',
    ),
    { relation: RELATION_VALUES },
  ),
  jobGpuAllocated: switchedBy(
    closedValues(
      jobSpec(
        'gauge',
        'ib_slurm_job_gpu_allocated',
        '',
        ['job_id', ...GPU_LABELS, 'held'],
        'A GPU Slurm gave a job on this node (its GRES, read with slurmd -G and scontrol show job -d: --gpu-allocation slurm), always 1; held is true when a process of the job holds it, false when none does. Absent while the allocation is unknown.',
      ),
      { held: BOOLEAN_VALUES },
    ),
    { option: '--gpu-allocation', value: 'slurm' },
  ),
  jobDeviceAttributed: jobSpec(
    'gauge',
    'ib_slurm_job_device_attributed',
    '',
    ['job_id', ...DP],
    '1 when the job is attributed the port, 0 when it holds the device but attribution is suppressed.',
  ),
  portState: spec(
    'gauge',
    'ib_slurm_device_port_state',
    '',
    DP,
    'Port state id from sysfs state (1: DOWN, 2: INIT, 3: ARMED, 4: ACTIVE, 5: ACTIVE_DEFER).',
  ),
  portPhysicalState: spec(
    'gauge',
    'ib_slurm_device_port_physical_state',
    '',
    DP,
    'Port physical state id from sysfs phys_state (1: Sleep, 2: Polling, 3: Disabled, 4: PortConfigurationTraining, 5: LinkUp, 6: LinkErrorRecovery, 7: Phy Test).',
  ),
  // No declared unit, though the value is bytes per second (the name says so): the Collector's
  // Prometheus name translation appends `_per_second` again for the unit By/s, so with it the
  // family would arrive under another name than the direct scrape's and break every query.
  portRate: spec(
    'gauge',
    'ib_slurm_device_port_rate_bytes_per_second',
    '',
    DP,
    'Signalling rate of the port from sysfs rate: Gb/s × 125,000,000 (divide the bytes rates by it for utilisation).',
  ),
  portUp: spec(
    'gauge',
    'ib_slurm_device_port_up',
    '',
    [...DP, 'link_layer', 'rate'],
    '1 when the port state is ACTIVE, else 0.',
  ),
  deviceInfo: spec(
    'gauge',
    'ib_slurm_device_info',
    '',
    ['device', 'board_id', 'firmware_version', 'hca_type'],
    'HCA identity; value is always 1.',
  ),
  counterSaturated: spec(
    'gauge',
    'ib_slurm_device_counters_saturated',
    '',
    [...DP, 'counter'],
    '1 when a fixed-width PMA counter has reached its maximum and stopped counting, else 0.',
  ),
  jobRdmaHandles: jobSpec(
    'gauge',
    'ib_slurm_job_rdma_handles',
    '',
    ['job_id', 'device'],
    'Verbs contexts (hca_handle) the job cgroup holds on the device, from its rdma.current; absent when the rdma cgroup controller is not enabled for the job (no evidence, not zero).',
  ),
  jobRdmaObjects: jobSpec(
    'gauge',
    'ib_slurm_job_rdma_objects',
    '',
    ['job_id', 'device'],
    'Verbs objects (hca_object: QPs, CQs, MRs, PDs …) the job cgroup holds on the device, from its rdma.current; absent without the rdma cgroup controller.',
  ),
  jobQpCounters: qpSpec(
    'counter',
    'ib_slurm_job_qp_counters',
    '',
    ['job_id', ...DP, 'counter'],
    "The job's own QP counters (requests, errors, and rdma_tx_bytes/rdma_rx_bytes where the kernel has them), summed over its processes' per-PID QP counters (--qp-counters), from 0 at its first sight on the port; exported on shared ports too.",
  ),
  jobQpTransmitBytes: qpSpec(
    'counter',
    'ib_slurm_job_qp_transmit_bytes',
    'By',
    ['job_id', ...DP],
    "Bytes the job's counted QPs transmitted (the optional rdma_tx_bytes QP counter), on shared ports too.",
  ),
  jobQpReceiveBytes: qpSpec(
    'counter',
    'ib_slurm_job_qp_receive_bytes',
    'By',
    ['job_id', ...DP],
    "Bytes the job's counted QPs received (the optional rdma_rx_bytes QP counter), on shared ports too.",
  ),
  jobQpCounted: qpSpec(
    'gauge',
    'ib_slurm_job_qp_counted',
    '',
    ['job_id', ...DP],
    "The job's QPs bound to a per-PID counter: QPs created before the mode was on, and mlx5 DEVX QPs, are not; compare with ib_slurm_job_qps.",
  ),
  jobQps: qpSpec(
    'gauge',
    'ib_slurm_job_qps',
    '',
    ['job_id', ...DP],
    "The job's QPs on the port (rdma resource show qp).",
  ),
  jobProcesses: jobSpec(
    'gauge',
    'ib_slurm_job_processes',
    '',
    ['job_id'],
    'Processes in the job cgroups on this node, slurmstepd included.',
  ),
  jobCpuUser: usageSpec(
    'counter',
    'ib_slurm_job_cpu_user_seconds',
    's',
    ['job_id'],
    "CPU time the job's processes spent in user mode on this node, from the job cgroup (v2 cpu.stat user_usec; v1 cpuacct.usage_user, or cpuacct.stat where the kernel lacks it); from 0 when the job's cgroup was made. With --job-usage on.",
  ),
  jobCpuSystem: usageSpec(
    'counter',
    'ib_slurm_job_cpu_system_seconds',
    's',
    ['job_id'],
    "CPU time the job's processes spent in the kernel on this node, from the job cgroup (v2 cpu.stat system_usec; v1 cpuacct.usage_sys). With --job-usage on.",
  ),
  jobCpuThrottledPeriods: usageSpec(
    'counter',
    'ib_slurm_job_cpu_throttled_periods',
    '',
    ['job_id'],
    'Scheduler periods in which the job cgroup was throttled by its CPU quota (cpu.stat nr_throttled); absent where the cpu controller does not hold the job cgroup.',
  ),
  jobCpuThrottled: usageSpec(
    'counter',
    'ib_slurm_job_cpu_throttled_seconds',
    's',
    ['job_id'],
    'Time the job cgroup was held back by its CPU quota (v2 cpu.stat throttled_usec, v1 throttled_time); absent where the cpu controller does not hold the job cgroup.',
  ),
  jobMemory: usageSpec(
    'gauge',
    'ib_slurm_job_memory_used_bytes',
    'By',
    ['job_id'],
    'Memory charged to the job cgroup, as counted against its limit (v2 memory.current, v1 memory.usage_in_bytes): page cache included, so more than the RSS Slurm reports for a job that reads or writes files. Absent where the memory controller does not hold the job cgroup.',
  ),
  jobMemoryPeak: usageSpec(
    'gauge',
    'ib_slurm_job_memory_peak_bytes',
    'By',
    ['job_id'],
    'Highest memory charged to the job cgroup since it was made, on the same basis (v2 memory.peak from Linux 5.19, v1 memory.max_usage_in_bytes).',
  ),
  jobMemoryLimit: usageSpec(
    'gauge',
    'ib_slurm_job_memory_limit_bytes',
    'By',
    ['job_id'],
    'Memory limit of the job cgroup (v2 memory.max, v1 memory.limit_in_bytes; Slurm sets it with ConstrainRAMSpace=yes); absent when the job has none.',
  ),
  jobOomKills: usageSpec(
    'counter',
    'ib_slurm_job_oom_kills',
    '',
    ['job_id'],
    "Processes the kernel's OOM killer killed in the job cgroup, any step (v2 memory.events oom_kill, v1 memory.oom_control oom_kill from Linux 4.13).",
  ),
  jobCpusAllocated: usageSpec(
    'gauge',
    'ib_slurm_job_cpus_allocated',
    '',
    ['job_id'],
    "CPUs Slurm gave the job on this node, counted in the job's cpuset (cpuset.cpus of the job cgroup, v1 and v2; v2's inherited cpuset.cpus.effective is not an allocation); absent unless Slurm constrains cores (ConstrainCores=yes). Divide the job's CPU seconds rate by it for its CPU efficiency on this node. With --job-usage on.",
  ),
  unresolvedAllocations: spec(
    'gauge',
    'ib_slurm_unresolved_allocations',
    '',
    [],
    'Job cgroups whose job id could not be resolved (e.g. a SLUID with no stepd title): they get no job series.',
  ),
  unattributedJobs: spec(
    'gauge',
    'ib_slurm_unattributed_jobs',
    '',
    [],
    'Jobs holding at least one HCA port that is not attributed to them.',
  ),
  unreadableProcesses: closedValues(
    spec(
      'gauge',
      'ib_slurm_unreadable_processes',
      '',
      ['scope'],
      'Processes whose fd table could not be read this cycle, in a Slurm job (scope job: that job and every port it could share are not attributed) or outside (scope outside: every port incomplete, or ignored with --unreadable-processes ignore-outside-jobs).',
    ),
    { scope: ['job', 'outside'] },
  ),
  cgroupLayout: closedValues(
    spec(
      'gauge',
      'ib_slurm_cgroup_layout_info',
      '',
      ['layout', 'scope'],
      'cgroup layout of each Slurm scope (v1 root or v2 stepd scope): v1, v2 (job_<id> directories, also 26.05.2+ with CgroupJobIdPaths=yes), or v2-sluid once a job directory there is a bare SLUID (26.05+ by default), one layout per scope; value is always 1. Absent when no Slurm hierarchy is found.',
    ),
    { layout: ['v1', 'v2', 'v2-sluid'] },
  ),
  cgroupFoundSlurm: spec(
    'gauge',
    'ib_slurm_cgroup_scan_found_slurm',
    '',
    [],
    '1 when the cgroup root holds a Slurm hierarchy (a v1 slurm* tree or a v2 *slurmstepd.scope), else 0: then no job can be seen.',
  ),
} as const;

/** Self-monitoring, served on the monitoring endpoint. */
export const NODE_SELF_METRICS = {
  cycleDuration: spec(
    'gauge',
    'ib_slurm_exporter_cycle_duration_seconds',
    's',
    [],
    'Duration of the last collection cycle.',
  ),
  cycles: spec('counter', 'ib_slurm_exporter_cycles', '', [], 'Collection cycles run.'),
  cycleErrors: closedValues(
    spec(
      'counter',
      'ib_slurm_exporter_cycle_errors',
      '',
      ['source', 'kind'],
      'Read errors by source (cgroup, proc, sysfs, jobid, rdma, gres: slurmd -G or squeue --json of the GPU allocation) and kind (denied, malformed: unparsable or not a regular file, too_large: over the read bound, io: any other failure, an rdma or squeue timeout or exit status included); vanished files are normal and not counted.',
    ),
    {
      source: ['cgroup', 'proc', 'sysfs', 'jobid', 'rdma', 'gres'],
      kind: ['denied', 'malformed', 'too_large', 'io'],
    },
  ),
  seriesExported: spec('gauge', 'ib_slurm_exporter_series_exported', '', [], 'Points in the last published snapshot.'),
  scrapeRequests: spec(
    'counter',
    'ib_slurm_exporter_scrape_requests',
    '',
    ['path'],
    'HTTP requests served by the metrics endpoint.',
  ),
  otlpExports: closedValues(
    spec(
      'counter',
      'ib_slurm_exporter_otlp_exports',
      '',
      ['result'],
      'OTLP push attempts by result: success (every point taken), failure (not delivered: refused, unreachable, timed out), rejected (answered, but the receiver refused some points: OTLP partial success).',
    ),
    { result: ['success', 'failure', 'rejected'] },
  ),
  otlpRejectedPoints: spec(
    'counter',
    'ib_slurm_exporter_otlp_rejected_points',
    '',
    [],
    'Points an OTLP receiver refused in answers to pushes it otherwise took (partial success; the push counts as result="rejected").',
  ),
  qpDropped: closedValues(
    spec(
      'counter',
      'ib_slurm_exporter_qp_reading_dropped',
      '',
      ['reason'],
      'Parts of rdma readings (--qp-counters) left out, by reason: entries (over the cap of counters or QP groups per reading), counters (a counter name outside the Q group beyond the few others accepted), devices (not an HCA port of this node in sysfs), qpns (QP numbers over the cap), values (a counter value no 64-bit counter holds: that counter is left out).',
    ),
    { reason: ['entries', 'counters', 'devices', 'qpns', 'values'] },
  ),
  fdLinksRead: spec(
    'counter',
    'ib_slurm_exporter_fd_links_read',
    '',
    [],
    'fd symlinks read with readlink (the fd cache avoids most).',
  ),
  fdProbes: closedValues(
    spec(
      'counter',
      'ib_slurm_exporter_fd_probes',
      '',
      ['result'],
      'fds named like a device on a network, FUSE or stacked filesystem, whose device was asked with stat in a child process (never on the event loop), by result: device (a character device), other (not one), failed (stat refused or failed), timeout (no answer within the deadline: the child is killed and left, its mount not asked again), skipped (not asked: a mount that hung before, too many this cycle, too many stats still stuck). Any but device and other leaves the process uncertain.',
    ),
    { result: ['device', 'other', 'failed', 'timeout', 'skipped'] },
  ),
} as const;

checkCatalogue([...Object.values(NODE_METRICS), ...Object.values(NODE_SELF_METRICS)]);
