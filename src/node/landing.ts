/**
 * The node agent's landing page: rendered once per cycle from the same rows
 * as `slurm-otel explain`.
 */
import { escapeHtml as esc, formatRate, formatSi, page, sparkline } from '../telemetry/page.js';
import type { PortRow } from './explain.js';
import { evidenceText, holderText, KEY_COUNTERS } from './explain.js';
import { saturated } from './read/hca.js';
import {
  ERROR_COUNTERS,
  jobKey,
  portKey,
  rateSteps,
  RX_BYTES,
  TX_BYTES,
  type CounterHistory,
  type Reading,
} from './history.js';
import type { QpState } from './qp/qp-counters.js';
import { unreadableEffect, type UnreadableProcess } from './read/unreadable.js';
import { renderGpuSection, type GpuSection } from './landing-gpus.js';
import { idleMovingNote, withNote } from './idle-traffic.js';

export interface LandingMeta {
  readonly host: string;
  readonly version: string;
  readonly atMs: number;
  readonly refreshSeconds: number;
  readonly gaps: readonly string[];
  /** Said first when the cgroup root holds no Slurm hierarchy. */
  readonly slurmCgroups?: string;
  readonly unreadable?: readonly UnreadableProcess[];
  /** Recent readings per port and per sole job: the page shows their rates and trend. */
  readonly history?: CounterHistory;
  /** Per-job QP counter totals (--qp-counters observe|manage): each job's own share of a port. */
  readonly qp?: QpState;
  /** The GPU units beside the ports, or why the node has none. */
  readonly gpus?: GpuSection;
}

const ERROR_SPARK = { width: 80, height: 16 };
const STATUS_STYLE =
  '.spark{display:block;color:#1f5fa8}.err{display:flex;justify-content:space-between;gap:.5em;align-items:center;max-width:22em}' +
  '.err .spark{color:#bbb}.err.moved .spark{color:#b03a2e}.err.moved .num{color:#a40}.num{white-space:nowrap}table{width:100%}.sole{background:#e7f6e7}.shared{background:#fdecea}.nonjob{background:#fff4e0}.incomplete{background:#fdf7d2}.unallocated{background:#fdecea}';

export function renderLanding(rows: readonly PortRow[], meta: LandingMeta): string {
  const gaps = meta.gaps.length
    ? `<p class="warn">Attribution suppressed on every port: ${meta.gaps.slice(0, 5).map(esc).join('; ')}</p>`
    : '';
  const noSlurm = meta.slurmCgroups ? `<p class="warn" id="no-slurm">${esc(meta.slurmCgroups)}</p>\n` : '';
  const body = `${noSlurm}<p>Node <b>${esc(meta.host)}</b>, version ${esc(meta.version)}. Last cycle ${esc(new Date(meta.atMs).toISOString())}.
Endpoints: <a href="/metrics">/metrics</a> · <a href="/health">/health</a>.</p>
<p>A job gets series on a port only when it is the only holder of the device and nothing was left unseen.</p>
${gaps}
<table id="ports">
<thead><tr><th>device</th><th>port</th><th>link</th><th>jobs (PIDs)</th><th>non-job processes</th><th>status</th><th>why</th><th>counters</th></tr></thead>
<tbody>
${rows.map((r) => renderRow(withNote(r, idleMovingNote(r, movingNow(r, meta.history))))).join('\n')}
</tbody></table>
${meta.gpus ? renderGpuSection(meta.gpus) : ''}
${meta.history ? renderMotion(rows, meta.history) : ''}
${meta.qp ? renderQp(meta.qp) : ''}
${renderUnreadable(meta.unreadable ?? [])}`;
  return page({
    title: `slurm-otel node agent · ${meta.host}`,
    refreshSeconds: meta.refreshSeconds,
    body,
    style: STATUS_STYLE,
  });
}

function renderRow(r: PortRow): string {
  const jobs =
    r.jobs
      .map(
        (j) =>
          `<div data-job="${esc(j.jobId)}">${esc(j.jobId)}: ${j.holders.map((h) => esc(holderText(h))).join(', ')} ${evidenceText(j.evidence)}</div>`,
      )
      .join('') || '—';
  const nonJob = r.nonJob.map((h) => `${esc(holderText(h))} ${evidenceText(h.evidence)}`).join('<br>') || '—';
  const counters = KEY_COUNTERS.filter((k) => r.counters[k] !== undefined)
    .map((k) => `<code>${k}=${esc(r.counters[k] as string)}</code>`)
    .join('<br>');
  return (
    `<tr class="${r.status}" data-device="${esc(r.device)}" data-port="${esc(r.port)}" data-status="${r.status}">` +
    `<td>${esc(r.device)}</td><td>${esc(r.port)}</td><td>${esc(`${r.linkLayer} ${r.rate}`)}<br>${esc(r.state)}</td>` +
    `<td>${jobs}</td><td>${nonJob}</td><td>${r.status}</td><td>${esc(r.why)}</td><td>${counters}</td></tr>`
  );
}

/** The port's bytes per second in the latest step, sent and received together; undefined without two readings. */
function movingNow(r: PortRow, history: CounterHistory | undefined): number | undefined {
  const readings = history?.readings(portKey(r.device, r.port)) ?? [];
  const steps = [TX_BYTES, RX_BYTES].map((name) => lastRate(readings, name));
  return steps.every((v) => v === undefined) ? undefined : steps.reduce<number>((sum, v) => sum + (v ?? 0), 0);
}

/** Every process whose fd table could not be read, with why and what it costs. */
function renderUnreadable(list: readonly UnreadableProcess[]): string {
  if (list.length === 0) return '';
  const rows = list.map(
    (u) =>
      `<tr data-pid="${u.pid}" data-effect="${u.effect}"><td>${u.pid}</td><td>${esc(u.comm)}</td><td><code>${esc(u.cgroup)}</code></td>` +
      `<td>${esc(u.errno)}</td><td>${u.scope}</td><td>${esc(unreadableEffect(u))}</td><td>${esc(u.cause)}</td></tr>`,
  );
  return `<h2>Processes whose fd table cannot be read</h2>
<table id="unreadable">
<thead><tr><th>PID</th><th>comm</th><th>cgroup</th><th>error</th><th>scope</th><th>effect</th><th>cause</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody></table>`;
}

/** Rates and trend per port (bytes and error counters), then per job with its own series. */
function renderMotion(rows: readonly PortRow[], history: CounterHistory): string {
  const ports = rows.map((r) => portMotionRow(r, history.readings(portKey(r.device, r.port))));
  const jobs = rows
    .filter((r) => r.attributedTo !== undefined)
    .map((r) =>
      jobMotionRow(r.attributedTo as string, r, history.readings(jobKey(r.attributedTo as string, r.device, r.port))),
    );
  const longest = Math.max(0, ...history.keys().map((k) => history.readings(k).length));
  return `<h2>Traffic and errors</h2>
<p>Per-second rates between consecutive cycles, over the last ${longest} readings; the figure is the latest step. A counter that went down (a reset) has no rate for that step.</p>
<table id="motion">
<thead><tr><th>device</th><th>port</th><th>transmit</th><th>receive</th><th>error counters</th></tr></thead>
<tbody>
${ports.join('\n')}
</tbody></table>
<h2>Jobs with their own series</h2>
<p>Bytes counted for each job that is the only holder of a port, since it became so (its <code>ib_slurm_job_*_bytes</code> series).</p>
${
  jobs.length === 0
    ? '<p id="no-sole-jobs">No job is the only holder of a port this cycle.</p>'
    : `<table id="jobs">
<thead><tr><th>job</th><th>device/port</th><th>transmitted</th><th>received</th><th>transmit rate</th><th>receive rate</th></tr></thead>
<tbody>
${jobs.join('\n')}
</tbody></table>`
}`;
}

function portMotionRow(r: PortRow, readings: readonly Reading[]): string {
  const latest = readings.at(-1)?.values;
  const errors =
    ERROR_COUNTERS.filter((name) => latest?.has(name))
      .map((name) => errorLine(name, readings))
      .join('') || '—';
  return (
    `<tr data-motion="${esc(`${r.device}/${r.port}`)}"><td>${esc(r.device)}</td><td>${esc(r.port)}</td>` +
    `${rateCell(readings, TX_BYTES, 'transmit')}${rateCell(readings, RX_BYTES, 'receive')}<td class="errs">${errors}</td></tr>`
  );
}

/**
 * One error counter on one line; a counter that did not move over the whole window is drawn grey,
 * a saturated one (stopped at its maximum, so its rate is unknown) is flagged.
 */
function errorLine(name: string, readings: readonly Reading[]): string {
  const steps = rates(readings, name);
  const stuck = saturated(name, readings.at(-1)?.values.get(name) ?? 0n);
  const moved = stuck || steps.some((v) => v !== undefined && v > 0);
  const figure = stuck ? 'saturated' : formatRate(lastRate(readings, name));
  return (
    `<div class="err${moved ? ' moved' : ''}" data-counter="${name}"><span class="num">${name} ${figure}</span>` +
    `${sparkline(steps, `${name} per second`, ERROR_SPARK)}</div>`
  );
}

function jobMotionRow(jobId: string, r: PortRow, readings: readonly Reading[]): string {
  const latest = readings.at(-1)?.values;
  const total = (name: string): string => {
    const v = latest?.get(name);
    return `<td class="num" data-total="${name}">${v === undefined ? '—' : formatSi(Number(v), 'B')}</td>`;
  };
  return (
    `<tr data-sole-job="${esc(jobId)}" data-motion="${esc(`${r.device}/${r.port}`)}"><td>${esc(jobId)}</td><td>${esc(`${r.device}/${r.port}`)}</td>` +
    `${total(TX_BYTES)}${total(RX_BYTES)}${rateCell(readings, TX_BYTES, 'transmit')}${rateCell(readings, RX_BYTES, 'receive')}</tr>`
  );
}

function rateCell(readings: readonly Reading[], name: string, what: string): string {
  return `<td data-rate="${name}"><span class="num">${formatRate(lastRate(readings, name), 'B')}</span>${sparkline(rates(readings, name), `${what} bytes per second`)}</td>`;
}

const rates = (readings: readonly Reading[], name: string): (number | undefined)[] =>
  rateSteps(readings, name).map((s) => s.perSecond);
const lastRate = (readings: readonly Reading[], name: string): number | undefined =>
  rateSteps(readings.slice(-2), name)[0]?.perSecond;

/** Counters shown per job: the retransmission and sequence errors, and the optional bytes. */
const QP_SHOWN = [
  'rdma_tx_bytes',
  'rdma_rx_bytes',
  'packet_seq_err',
  'out_of_sequence',
  'local_ack_timeout_err',
  'rnr_nak_retry_err',
] as const;

/**
 * Each job's own totals from per-PID QP counters, shared ports included, with the coverage:
 * QPs created before the counting mode was on, and DEVX QPs, have no counter.
 */
function renderQp(qp: QpState): string {
  const series = [...qp.series.values()].sort((a, b) =>
    `${a.device} ${a.port} ${a.jobId}`.localeCompare(`${b.device} ${b.port} ${b.jobId}`),
  );
  if (series.length === 0) return '';
  const rows = series.map((s) => {
    const key = `${s.jobId} ${s.device} ${s.port}`;
    const counted = qp.counted.get(key);
    const total = qp.qps.get(key);
    const coverage = counted === undefined || total === undefined ? '—' : `${counted} of ${total} QPs`;
    const values = QP_SHOWN.filter((c) => s.values.has(c))
      .map((c) => `${esc(c)}=${esc(formatSi(Number(s.values.get(c))))}`)
      .join('<br>');
    return `<tr data-qp-job="${esc(s.jobId)}"><td>${esc(s.jobId)}</td><td>${esc(s.device)}/${esc(s.port)}</td><td>${esc(coverage)}</td><td><code>${values || '—'}</code></td></tr>`;
  });
  return `<h2>Jobs' own QP counters</h2>
<p>Per-PID QP counters summed over each job's processes since the job was first seen, on shared ports too. Only QPs with a counter are counted.</p>
<table id="qp-jobs"><thead><tr><th>job</th><th>device/port</th><th>counted</th><th>totals</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody></table>`;
}
