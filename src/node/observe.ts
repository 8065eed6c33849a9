/** Snapshot + attribution → the node families of the catalogue, as points. */
import { point, type Family, type Point } from '../telemetry/spec.js';
import { GPU_STATUSES, PORT_STATUSES, type Attribution, type GpuVerdict } from './join/attribution.js';
import { PMA_WIDTH, saturated } from './read/hca.js';
import { GPU_LABELS, NODE_METRICS as M, type JOB_METADATA_LABELS } from './metrics.js';
import type { QpState } from './qp/qp-counters.js';
import type { NodeSnapshot } from './join/snapshot.js';
import { gpusByBusId, jobPairs } from './locality.js';
import { isPlaced } from './read/pci-topology.js';
import type { JobUsage } from './read/job-usage.js';
import type { UsageStarts } from './join/job-usage.js';

export function observe(snap: NodeSnapshot, attr: Attribution): Family[] {
  return [
    ...deviceFamilies(snap, attr),
    ...jobFamilies(snap, attr),
    ...summaryFamilies(snap, attr),
    ...gpuFamilies(snap, attr),
    ...localityFamilies(snap, attr),
  ];
}

/** Each (GPU, HCA) pair's relation, and the pairs each job holds. */
function localityFamilies(snap: NodeSnapshot, attr: Attribution): Family[] {
  const gpus = gpusByBusId(snap);
  const numa = (n: number | undefined): string => (n === undefined ? '' : String(n));
  const pairs: Point[] = [];
  for (const p of snap.locality?.pairs ?? []) {
    const gpu = gpus.get(p.gpu);
    const g = snap.locality?.gpus.get(p.gpu);
    const h = snap.locality?.hcas.get(p.hca);
    if (gpu === undefined || !isPlaced(g) || !isPlaced(h)) continue;
    const labels = { UUID: gpu.uuid, pci_bus_id: gpu.busIdDcgm, device: p.hca, relation: p.relation };
    pairs.push(
      point(M.gpuHcaLocality, { ...labels, gpu_numa_node: numa(g.numaNode), hca_numa_node: numa(h.numaNode) }, 1),
    );
  }
  const jobs = jobPairs(snap, attr).map((j) =>
    point(
      M.jobGpuHcaLocality,
      {
        job_id: j.jobId,
        UUID: j.gpu.uuid,
        pci_bus_id: j.gpu.busIdDcgm,
        device: j.hca,
        relation: j.relation,
        ...metadataOf(snap, j.jobId),
      },
      j.attributed ? 1 : 0,
    ),
  );
  return [
    { spec: M.gpuHcaLocality, points: pairs },
    { spec: M.jobGpuHcaLocality, points: jobs },
  ];
}

/** The labels of a GPU unit, as DCGM exporter names a GPU. */
function gpuLabels(v: GpuVerdict): Record<(typeof GPU_LABELS)[number], string> {
  const { gpu, gi, ci } = v.unit;
  return {
    UUID: gpu.uuid,
    pci_bus_id: gpu.busIdDcgm,
    device: `nvidia${gpu.minor}`,
    GPU_I_ID: gi === undefined ? '' : String(gi),
    compute_instance: ci === undefined ? '' : String(ci),
  };
}

function gpuFamilies(snap: NodeSnapshot, attr: Attribution): Family[] {
  const status: Point[] = [];
  const holders: Point[] = [];
  const allocated: Point[] = [];
  for (const v of attr.gpus ?? []) {
    const labels = gpuLabels(v);
    for (const s of GPU_STATUSES)
      status.push(point(M.gpuAttribution, { ...labels, status: s }, s === v.status ? 1 : 0));
    const keys = new Set(snap.gpuHolders.get(v.unit.key)?.allocations ?? []);
    const holding = new Set<string>();
    for (const a of snap.allocations) {
      if (!keys.has(a.key) || a.jobId === undefined) continue;
      holding.add(a.jobId);
      const attributed = v.status === 'sole' && v.soleJobId === a.jobId ? 1 : 0;
      holders.push(point(M.jobGpuHolder, { job_id: a.jobId, ...labels, ...metadataOf(snap, a.jobId) }, attributed));
    }
    // Only jobs whose cgroups are on the node: a job squeue still lists after its end has no series.
    const present = new Set(snap.allocations.map((a) => a.jobId));
    for (const job of v.allocatedTo ?? []) {
      if (!present.has(job)) continue;
      const held = holding.has(job) ? 'true' : 'false';
      allocated.push(point(M.jobGpuAllocated, { job_id: job, ...labels, held, ...metadataOf(snap, job) }, 1));
    }
  }
  return [
    { spec: M.gpuAttribution, points: status },
    { spec: M.jobGpuHolder, points: holders },
    { spec: M.jobGpuAllocated, points: allocated },
  ];
}

function deviceFamilies(snap: NodeSnapshot, attr: Attribution): Family[] {
  const counters: Point[] = [];
  const tx: Point[] = [];
  const rx: Point[] = [];
  const up: Point[] = [];
  const state: Point[] = [];
  const physState: Point[] = [];
  const rate: Point[] = [];
  const info: Point[] = [];
  const sat: Point[] = [];
  for (const hca of snap.hca.hcas) {
    info.push(
      point(
        M.deviceInfo,
        {
          device: hca.device,
          board_id: hca.boardId ?? '',
          firmware_version: hca.firmware ?? '',
          hca_type: hca.hcaType ?? '',
        },
        1,
      ),
    );
    for (const p of hca.ports) {
      const dp = { device: hca.device, port: p.port };
      const active = /\bACTIVE\b/.test(p.state ?? '') ? 1 : 0;
      up.push(point(M.portUp, { ...dp, link_layer: p.linkLayer ?? '', rate: p.rate ?? '' }, active));
      if (p.stateId !== undefined) state.push(point(M.portState, dp, p.stateId));
      if (p.physStateId !== undefined) physState.push(point(M.portPhysicalState, dp, p.physStateId));
      if (p.rateBytesPerSecond !== undefined) rate.push(point(M.portRate, dp, p.rateBytesPerSecond));
      for (const [counter, value] of p.counters) {
        const startTimeMs = attr.state.deviceStarts.get(`${hca.device} ${p.port} ${counter}`)?.startMs;
        counters.push(point(M.deviceCounters, { ...dp, counter }, value, startTimeMs));
        if (counter in PMA_WIDTH)
          sat.push(point(M.counterSaturated, { ...dp, counter }, saturated(counter, value) ? 1 : 0));
      }
      const xmit = dataCounter(p.counters, 'xmit');
      const rcv = dataCounter(p.counters, 'rcv');
      const startOf = (name: string): number | undefined =>
        attr.state.deviceStarts.get(`${hca.device} ${p.port} ${name}`)?.startMs;
      if (xmit) tx.push(point(M.deviceTransmitBytes, dp, xmit.value * 4n, startOf(xmit.name)));
      if (rcv) rx.push(point(M.deviceReceiveBytes, dp, rcv.value * 4n, startOf(rcv.name)));
    }
  }
  return [
    { spec: M.deviceCounters, points: counters },
    { spec: M.deviceTransmitBytes, points: tx },
    { spec: M.deviceReceiveBytes, points: rx },
    { spec: M.portUp, points: up },
    { spec: M.portState, points: state },
    { spec: M.portPhysicalState, points: physState },
    { spec: M.portRate, points: rate },
    { spec: M.deviceInfo, points: info },
    { spec: M.counterSaturated, points: sat },
  ];
}

/**
 * The 4-octet data word counter of a direction: counters/port_<dir>_data, or the 64-bit
 * counters_ext/port_<dir>_data_64 of kernels before 4.5 only when counters/ lacks the file.
 */
export function dataCounter(
  counters: ReadonlyMap<string, bigint>,
  dir: 'xmit' | 'rcv',
): { name: string; value: bigint } | undefined {
  for (const name of [`port_${dir}_data`, `port_${dir}_data_64`]) {
    const value = counters.get(name);
    if (value !== undefined) return { name, value };
  }
  return undefined;
}

const NO_METADATA = { user_name: '', account: '', slurm_partition: '' };

type Metadata = Partial<Record<(typeof JOB_METADATA_LABELS)[number], string>>;

/** The job's metadata labels when a source is configured (empty values while unknown), else none. */
function metadataOf(snap: NodeSnapshot, jobId: string): Metadata {
  return snap.metadata ? { ...(snap.metadata.get(jobId) ?? NO_METADATA) } : {};
}

function jobFamilies(snap: NodeSnapshot, attr: Attribution): Family[] {
  const counters: Point[] = [];
  const tx: Point[] = [];
  const rx: Point[] = [];
  const attributed: Point[] = [];
  const sole = new Set(
    attr.verdicts.filter((v) => v.status === 'sole').map((v) => `${v.soleJobId} ${v.device} ${v.port}`),
  );
  for (const s of attr.state.jobs.values()) {
    // Series exist only while the job is sole user; suppressed ones keep their state, unexported.
    if (!sole.has(`${s.jobId} ${s.device} ${s.port}`)) continue;
    const base = { job_id: s.jobId, device: s.device, port: s.port, ...metadataOf(snap, s.jobId) };
    for (const [counter, value] of s.values)
      counters.push(point(M.jobCounters, { ...base, counter }, value, s.startMs));
    const xmit = dataCounter(s.values, 'xmit');
    const rcv = dataCounter(s.values, 'rcv');
    if (xmit) tx.push(point(M.jobTransmitBytes, base, xmit.value * 4n, s.startMs));
    if (rcv) rx.push(point(M.jobReceiveBytes, base, rcv.value * 4n, s.startMs));
  }
  for (const v of attr.verdicts) {
    for (const job of jobIdsOf(snap, v.device)) {
      const attributes = { job_id: job, device: v.device, port: v.port, ...metadataOf(snap, job) };
      attributed.push(point(M.jobDeviceAttributed, attributes, v.status === 'sole' && v.soleJobId === job ? 1 : 0));
    }
  }
  const processes = snap.allocations
    .filter((a) => a.jobId !== undefined)
    .map((a) =>
      point(
        M.jobProcesses,
        { job_id: a.jobId as string, ...metadataOf(snap, a.jobId as string) },
        new Set([...a.pids, ...a.stepdPids]).size,
      ),
    );
  const [handles, objects] = rdmaPoints(snap);
  return [
    { spec: M.jobCounters, points: counters },
    { spec: M.jobTransmitBytes, points: tx },
    { spec: M.jobReceiveBytes, points: rx },
    { spec: M.jobDeviceAttributed, points: attributed },
    { spec: M.jobProcesses, points: processes },
    { spec: M.jobRdmaHandles, points: handles },
    { spec: M.jobRdmaObjects, points: objects },
  ];
}

/** Each resolved job's rdma.current, device by device, zeros included (a zero there is the kernel's). */
function rdmaPoints(snap: NodeSnapshot): [Point[], Point[]] {
  const handles: Point[] = [];
  const objects: Point[] = [];
  for (const a of snap.allocations) {
    const e = snap.rdma.get(a.key);
    if (a.jobId === undefined || e === undefined) continue;
    for (const [device, c] of e.charges) {
      const attributes = { job_id: a.jobId, device, ...metadataOf(snap, a.jobId) };
      handles.push(point(M.jobRdmaHandles, attributes, c.handles));
      objects.push(point(M.jobRdmaObjects, attributes, c.objects));
    }
  }
  return [handles, objects];
}

/** Resolved job ids holding a device. */
function jobIdsOf(snap: NodeSnapshot, device: string): string[] {
  const keys = new Set(snap.holders.get(device)?.allocations ?? []);
  return snap.allocations.filter((a) => keys.has(a.key) && a.jobId !== undefined).map((a) => a.jobId as string);
}

function summaryFamilies(snap: NodeSnapshot, attr: Attribution): Family[] {
  const status: Point[] = [];
  const jobs: Point[] = [];
  const unattributed = new Set<string>();
  for (const v of attr.verdicts) {
    const dp = { device: v.device, port: v.port };
    for (const s of PORT_STATUSES) status.push(point(M.portAttribution, { ...dp, status: s }, s === v.status ? 1 : 0));
    jobs.push(point(M.deviceJobs, dp, v.jobs.length));
    if (v.status !== 'sole') for (const j of jobIdsOf(snap, v.device)) unattributed.add(j);
  }
  return [
    { spec: M.portAttribution, points: status },
    { spec: M.deviceJobs, points: jobs },
    {
      spec: M.unresolvedAllocations,
      points: [point(M.unresolvedAllocations, {}, snap.allocations.filter((a) => a.jobId === undefined).length)],
    },
    { spec: M.unattributedJobs, points: [point(M.unattributedJobs, {}, unattributed.size)] },
    {
      spec: M.unreadableProcesses,
      points: (['job', 'outside'] as const).map((scope) =>
        point(M.unreadableProcesses, { scope }, snap.unreadable.filter((u) => u.scope === scope).length),
      ),
    },
    {
      spec: M.cgroupLayout,
      points: snap.scopes.map((s) => point(M.cgroupLayout, { layout: s.layout, scope: s.scope }, 1)),
    },
    { spec: M.cgroupFoundSlurm, points: [point(M.cgroupFoundSlurm, {}, snap.slurmCgroups.found ? 1 : 0)] },
  ];
}

/** Per-job QP counter totals (shared ports included) and the QP coverage, with --qp-counters. */
export function qpFamilies(snap: NodeSnapshot, qp: QpState): Family[] {
  const counters: Point[] = [];
  const tx: Point[] = [];
  const rx: Point[] = [];
  for (const s of qp.series.values()) {
    const base = { job_id: s.jobId, device: s.device, port: s.port, ...metadataOf(snap, s.jobId) };
    for (const [counter, value] of s.values)
      counters.push(point(M.jobQpCounters, { ...base, counter }, value, s.startMs));
    const txBytes = s.values.get('rdma_tx_bytes');
    const rxBytes = s.values.get('rdma_rx_bytes');
    if (txBytes !== undefined) tx.push(point(M.jobQpTransmitBytes, base, txBytes, s.startMs));
    if (rxBytes !== undefined) rx.push(point(M.jobQpReceiveBytes, base, rxBytes, s.startMs));
  }
  const gauge = (spec: typeof M.jobQpCounted | typeof M.jobQps, m: ReadonlyMap<string, number>): Point[] =>
    [...m].map(([key, value]) => {
      const [job_id, device, port] = key.split(' ') as [string, string, string];
      return point(spec, { job_id, device, port, ...metadataOf(snap, job_id) }, value);
    });
  return [
    { spec: M.jobQpCounters, points: counters },
    { spec: M.jobQpTransmitBytes, points: tx },
    { spec: M.jobQpReceiveBytes, points: rx },
    // A job's QPs on none of the port's counters are counted as 0, beside their number: the
    // coverage says the per-job series are unavailable there rather than leaving it unsaid.
    { spec: M.jobQpCounted, points: gauge(M.jobQpCounted, withUncounted(qp.counted, qp.qps)) },
    { spec: M.jobQps, points: gauge(M.jobQps, qp.qps) },
  ];
}

/** QPs on a counter per `jobId device port`, 0 where the job has QPs and none is counted. */
function withUncounted(
  counted: ReadonlyMap<string, number>,
  qps: ReadonlyMap<string, number>,
): ReadonlyMap<string, number> {
  const out = new Map(counted);
  for (const key of qps.keys()) if (!out.has(key)) out.set(key, 0);
  return out;
}

type UsageSpec =
  | typeof M.jobCpuUser
  | typeof M.jobCpuSystem
  | typeof M.jobCpuThrottledPeriods
  | typeof M.jobCpuThrottled
  | typeof M.jobMemory
  | typeof M.jobMemoryPeak
  | typeof M.jobMemoryLimit
  | typeof M.jobOomKills
  | typeof M.jobCpusAllocated;

/** Each usage value and its family; counters carry their start (job-usage.ts). */
const USAGE_FAMILIES: readonly [Exclude<keyof JobUsage, 'oomKillsByCgroup'>, UsageSpec][] = [
  ['cpuUserSeconds', M.jobCpuUser],
  ['cpuSystemSeconds', M.jobCpuSystem],
  ['throttledPeriods', M.jobCpuThrottledPeriods],
  ['throttledSeconds', M.jobCpuThrottled],
  ['memoryBytes', M.jobMemory],
  ['memoryPeakBytes', M.jobMemoryPeak],
  ['memoryLimitBytes', M.jobMemoryLimit],
  ['oomKills', M.jobOomKills],
  ['cpusAllocated', M.jobCpusAllocated],
];

/** Per-job CPU and memory use from the job cgroups (--job-usage on); a value not read has no point. */
export function usageFamilies(snap: NodeSnapshot, starts: UsageStarts): Family[] {
  return USAGE_FAMILIES.map(([field, spec]) => {
    const points: Point[] = [];
    for (const [jobId, u] of snap.usage ?? []) {
      const value = u[field];
      if (value === undefined) continue;
      const start = spec.kind === 'counter' ? starts.get(`${jobId} ${field}`)?.startMs : undefined;
      points.push(point(spec, { job_id: jobId, ...metadataOf(snap, jobId) }, value, start));
    }
    return { spec, points };
  });
}
