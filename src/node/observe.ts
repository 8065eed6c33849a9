/** Snapshot + attribution → the node families of the catalogue, as points. */
import type { Family, Point } from '../telemetry/spec.js';
import { PORT_STATUSES, type Attribution } from './attribution.js';
import { PMA_WIDTH, saturated } from './hca.js';
import { NODE_METRICS as M } from './metrics.js';
import type { QpState } from './qp-counters.js';
import type { NodeSnapshot } from './snapshot.js';

export function observe(snap: NodeSnapshot, attr: Attribution): Family[] {
  return [...deviceFamilies(snap, attr), ...jobFamilies(snap, attr), ...summaryFamilies(snap, attr)];
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
    info.push({
      attributes: {
        device: hca.device,
        board_id: hca.boardId ?? '',
        firmware_version: hca.firmware ?? '',
        hca_type: hca.hcaType ?? '',
      },
      value: 1,
    });
    for (const p of hca.ports) {
      const dp = { device: hca.device, port: p.port };
      up.push({
        attributes: { ...dp, link_layer: p.linkLayer ?? '', rate: p.rate ?? '' },
        value: /\bACTIVE\b/.test(p.state ?? '') ? 1 : 0,
      });
      if (p.stateId !== undefined) state.push({ attributes: dp, value: p.stateId });
      if (p.physStateId !== undefined) physState.push({ attributes: dp, value: p.physStateId });
      if (p.rateBytesPerSecond !== undefined) rate.push({ attributes: dp, value: p.rateBytesPerSecond });
      for (const [counter, value] of p.counters) {
        const startTimeMs = attr.state.deviceStarts.get(`${hca.device} ${p.port} ${counter}`)?.startMs;
        counters.push({ attributes: { ...dp, counter }, value, startTimeMs });
        if (counter in PMA_WIDTH)
          sat.push({ attributes: { ...dp, counter }, value: saturated(counter, value) ? 1 : 0 });
      }
      const xmit = dataCounter(p.counters, 'xmit');
      const rcv = dataCounter(p.counters, 'rcv');
      if (xmit)
        tx.push({
          attributes: dp,
          value: xmit.value * 4n,
          startTimeMs: attr.state.deviceStarts.get(`${hca.device} ${p.port} ${xmit.name}`)?.startMs,
        });
      if (rcv)
        rx.push({
          attributes: dp,
          value: rcv.value * 4n,
          startTimeMs: attr.state.deviceStarts.get(`${hca.device} ${p.port} ${rcv.name}`)?.startMs,
        });
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

/** The job's metadata labels when a source is configured (empty values while unknown), else none. */
function metadataOf(snap: NodeSnapshot, jobId: string): Record<string, string> {
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
      counters.push({ attributes: { ...base, counter }, value, startTimeMs: s.startMs });
    const xmit = dataCounter(s.values, 'xmit');
    const rcv = dataCounter(s.values, 'rcv');
    if (xmit) tx.push({ attributes: base, value: xmit.value * 4n, startTimeMs: s.startMs });
    if (rcv) rx.push({ attributes: base, value: rcv.value * 4n, startTimeMs: s.startMs });
  }
  for (const v of attr.verdicts) {
    for (const job of jobIdsOf(snap, v.device)) {
      attributed.push({
        attributes: { job_id: job, device: v.device, port: v.port, ...metadataOf(snap, job) },
        value: v.status === 'sole' && v.soleJobId === job ? 1 : 0,
      });
    }
  }
  const processes = snap.allocations
    .filter((a) => a.jobId !== undefined)
    .map((a) => ({
      attributes: { job_id: a.jobId as string, ...metadataOf(snap, a.jobId as string) },
      value: new Set([...a.pids, ...a.stepdPids]).size,
    }));
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
      handles.push({ attributes, value: c.handles });
      objects.push({ attributes, value: c.objects });
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
    for (const s of PORT_STATUSES) status.push({ attributes: { ...dp, status: s }, value: s === v.status ? 1 : 0 });
    jobs.push({ attributes: dp, value: v.jobs.length });
    if (v.status !== 'sole') for (const j of jobIdsOf(snap, v.device)) unattributed.add(j);
  }
  return [
    { spec: M.portAttribution, points: status },
    { spec: M.deviceJobs, points: jobs },
    {
      spec: M.unresolvedAllocations,
      points: [{ attributes: {}, value: snap.allocations.filter((a) => a.jobId === undefined).length }],
    },
    { spec: M.unattributedJobs, points: [{ attributes: {}, value: unattributed.size }] },
    {
      spec: M.unreadableProcesses,
      points: (['job', 'outside'] as const).map((scope) => ({
        attributes: { scope },
        value: snap.unreadable.filter((u) => u.scope === scope).length,
      })),
    },
    {
      spec: M.cgroupLayout,
      points: snap.scopes.map((s) => ({ attributes: { layout: s.layout, scope: s.scope }, value: 1 })),
    },
    { spec: M.cgroupFoundSlurm, points: [{ attributes: {}, value: snap.slurmCgroups.found ? 1 : 0 }] },
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
      counters.push({ attributes: { ...base, counter }, value, startTimeMs: s.startMs });
    const txBytes = s.values.get('rdma_tx_bytes');
    const rxBytes = s.values.get('rdma_rx_bytes');
    if (txBytes !== undefined) tx.push({ attributes: base, value: txBytes, startTimeMs: s.startMs });
    if (rxBytes !== undefined) rx.push({ attributes: base, value: rxBytes, startTimeMs: s.startMs });
  }
  const gauge = (m: ReadonlyMap<string, number>): Point[] =>
    [...m].map(([key, value]) => {
      const [job_id, device, port] = key.split(' ') as [string, string, string];
      return { attributes: { job_id, device, port, ...metadataOf(snap, job_id) }, value };
    });
  return [
    { spec: M.jobQpCounters, points: counters },
    { spec: M.jobQpTransmitBytes, points: tx },
    { spec: M.jobQpReceiveBytes, points: rx },
    { spec: M.jobQpCounted, points: gauge(qp.counted) },
    { spec: M.jobQps, points: gauge(qp.qps) },
  ];
}
