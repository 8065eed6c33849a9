/**
 * The node agent's landing page: rendered once per cycle from the same rows
 * as `slurm-otel explain`.
 */
import { escapeHtml as esc, page } from '../telemetry/page.js';
import type { PortRow } from './explain.js';
import { evidenceText, KEY_COUNTERS } from './explain.js';
import { unreadableEffect, type UnreadableProcess } from './unreadable.js';

export interface LandingMeta {
  readonly host: string;
  readonly version: string;
  readonly atMs: number;
  readonly refreshSeconds: number;
  readonly gaps: readonly string[];
  /** Said first when the cgroup root holds no Slurm hierarchy. */
  readonly slurmCgroups?: string;
  readonly unreadable?: readonly UnreadableProcess[];
}

const STATUS_STYLE = 'table{width:100%}.sole{background:#e7f6e7}.shared{background:#fdecea}.nonjob{background:#fff4e0}.incomplete{background:#fdf7d2}';

export function renderLanding(rows: readonly PortRow[], meta: LandingMeta): string {
  const gaps = meta.gaps.length ? `<p class="warn">Attribution suppressed on every port: ${meta.gaps.slice(0, 5).map(esc).join('; ')}</p>` : '';
  const noSlurm = meta.slurmCgroups ? `<p class="warn" id="no-slurm">${esc(meta.slurmCgroups)}</p>\n` : '';
  const body = `${noSlurm}<p>Node <b>${esc(meta.host)}</b>, version ${esc(meta.version)}. Last cycle ${esc(new Date(meta.atMs).toISOString())}.
Endpoints: <a href="/metrics">/metrics</a> · <a href="/health">/health</a>.</p>
<p>A job gets series on a port only when it is the only holder of the device and nothing was left unseen.</p>
${gaps}
<table id="ports">
<thead><tr><th>device</th><th>port</th><th>link</th><th>jobs (PIDs)</th><th>non-job processes</th><th>status</th><th>why</th><th>counters</th></tr></thead>
<tbody>
${rows.map(renderRow).join('\n')}
</tbody></table>
${renderUnreadable(meta.unreadable ?? [])}`;
  return page({ title: `slurm-otel node agent · ${meta.host}`, refreshSeconds: meta.refreshSeconds, body, style: STATUS_STYLE });
}

function renderRow(r: PortRow): string {
  const jobs = r.jobs.map((j) => `<div data-job="${esc(j.jobId)}">${esc(j.jobId)}: ${j.holders.map((h) => `${h.pid} ${esc(h.comm)}`).join(', ')} ${evidenceText(j.evidence)}</div>`).join('') || '—';
  const nonJob = r.nonJob.map((h) => `${h.pid} ${esc(h.comm)} ${evidenceText(h.evidence)}`).join('<br>') || '—';
  const counters = KEY_COUNTERS.filter((k) => r.counters[k] !== undefined).map((k) => `<code>${k}=${esc(r.counters[k] as string)}</code>`).join('<br>');
  return `<tr class="${r.status}" data-device="${esc(r.device)}" data-port="${esc(r.port)}" data-status="${r.status}">`
    + `<td>${esc(r.device)}</td><td>${esc(r.port)}</td><td>${esc(`${r.linkLayer} ${r.rate}`)}<br>${esc(r.state)}</td>`
    + `<td>${jobs}</td><td>${nonJob}</td><td>${r.status}</td><td>${esc(r.why)}</td><td>${counters}</td></tr>`;
}

/** Every process whose fd table could not be read, with why and what it costs. */
function renderUnreadable(list: readonly UnreadableProcess[]): string {
  if (list.length === 0) return '';
  const rows = list.map((u) => `<tr data-pid="${u.pid}" data-effect="${u.effect}"><td>${u.pid}</td><td>${esc(u.comm)}</td><td><code>${esc(u.cgroup)}</code></td>`
    + `<td>${esc(u.errno)}</td><td>${u.scope}</td><td>${esc(unreadableEffect(u))}</td><td>${esc(u.cause)}</td></tr>`);
  return `<h2>Processes whose fd table cannot be read</h2>
<table id="unreadable">
<thead><tr><th>PID</th><th>comm</th><th>cgroup</th><th>error</th><th>scope</th><th>effect</th><th>cause</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody></table>`;
}
