/**
 * The cluster agent's landing page: what it is, where its endpoints are, and
 * how each sub-collector fared at the last collection.
 */
import { escapeHtml as esc, page } from '../telemetry/page.js';
import type { TickSummary } from './collect.js';
import { SUB_COLLECTORS } from './snapshot.js';

export interface ClusterLandingMeta {
  readonly clusterName: string;
  readonly server: string;
  readonly version: string;
  readonly refreshSeconds: number;
}

export function renderClusterLanding(tick: TickSummary | undefined, meta: ClusterLandingMeta): string {
  const rows = SUB_COLLECTORS.map((name) => {
    const got = tick?.collectors[name];
    const size = got === undefined ? '—' : got.items !== undefined ? `${got.items} items` : 'statistics';
    const failed = tick?.failed.includes(name) ?? false;
    const last = got ? new Date(got.atMs).toISOString() : 'never';
    return `<tr data-collector="${name}" data-ok="${!failed && got !== undefined}"><td>${name}</td><td>${failed ? '<span class="warn">failed; serving the last good data</span>' : got ? 'ok' : 'no data yet'}</td><td>${esc(last)}</td><td>${size}</td></tr>`;
  }).join('\n');
  const body = `<p>Soperator's Slurm exporter metrics for cluster <b>${esc(meta.clusterName)}</b>, read from slurmrestd at
<code>${esc(meta.server)}</code>. Version ${esc(meta.version)}.
Endpoints: <a href="/metrics">/metrics</a> · <a href="/health">/health</a>; self-monitoring on the monitoring port.</p>
<p>Last collection: ${tick ? esc(new Date(tick.atMs).toISOString()) : 'none yet'}.</p>
<table id="collectors"><thead><tr><th>sub-collector</th><th>last run</th><th>data from</th><th>size</th></tr></thead>
<tbody>
${rows}
</tbody></table>`;
  return page({ title: `slurm-otel cluster agent · ${meta.clusterName}`, refreshSeconds: meta.refreshSeconds, body });
}
