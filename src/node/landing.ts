/**
 * The node agent's landing page: rendered once per cycle from the same rows
 * as `slurm-otel explain`.
 */
import { escapeHtml as esc, page } from '../telemetry/page.js';
import type { PortRow } from './explain.js';
import { KEY_COUNTERS } from './explain.js';

export interface LandingMeta {
  readonly host: string;
  readonly version: string;
  readonly atMs: number;
  readonly refreshSeconds: number;
  readonly gaps: readonly string[];
}

const STATUS_STYLE = 'table{width:100%}.sole{background:#e7f6e7}.shared{background:#fdecea}.nonjob{background:#fff4e0}.incomplete{background:#fdf7d2}';

export function renderLanding(rows: readonly PortRow[], meta: LandingMeta): string {
  const gaps = meta.gaps.length ? `<p class="warn">Attribution suppressed on every port: ${meta.gaps.slice(0, 5).map(esc).join('; ')}</p>` : '';
  const body = `<p>Node <b>${esc(meta.host)}</b>, version ${esc(meta.version)}. Last cycle ${esc(new Date(meta.atMs).toISOString())}.
Endpoints: <a href="/metrics">/metrics</a> · <a href="/health">/health</a>.</p>
<p>A job gets series on a port only when it is the only holder of the device and nothing was left unseen.</p>
${gaps}
<table id="ports">
<thead><tr><th>device</th><th>port</th><th>link</th><th>jobs (PIDs)</th><th>non-job processes</th><th>status</th><th>why</th><th>counters</th></tr></thead>
<tbody>
${rows.map(renderRow).join('\n')}
</tbody></table>`;
  return page({ title: `slurm-otel node agent · ${meta.host}`, refreshSeconds: meta.refreshSeconds, body, style: STATUS_STYLE });
}

function renderRow(r: PortRow): string {
  const jobs = r.jobs.map((j) => `<div data-job="${esc(j.jobId)}">${esc(j.jobId)}: ${j.holders.map((h) => `${h.pid} ${esc(h.comm)}`).join(', ')}</div>`).join('') || '—';
  const nonJob = r.nonJob.map((h) => `${h.pid} ${esc(h.comm)}`).join('<br>') || '—';
  const counters = KEY_COUNTERS.filter((k) => r.counters[k] !== undefined).map((k) => `<code>${k}=${esc(r.counters[k] as string)}</code>`).join('<br>');
  return `<tr class="${r.status}" data-device="${esc(r.device)}" data-port="${esc(r.port)}" data-status="${r.status}">`
    + `<td>${esc(r.device)}</td><td>${esc(r.port)}</td><td>${esc(`${r.linkLayer} ${r.rate}`)}<br>${esc(r.state)}</td>`
    + `<td>${jobs}</td><td>${nonJob}</td><td>${r.status}</td><td>${esc(r.why)}</td><td>${counters}</td></tr>`;
}
