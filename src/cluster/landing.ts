/**
 * The cluster agent's landing page: what it is, where its endpoints are, node and job states at
 * the last collection, how each sub-collector fared, and the last errors (secrets redacted).
 */
import { ABSENT_RETRY_MS } from './api/absent.js';
import { redactSecrets } from '../log.js';
import { escapeHtml as esc, page } from '../telemetry/page.js';
import type { TickSummary } from './collect.js';
import { jobBaseState, type NodeState } from './model.js';
import { baseState, hasStateWord, isDraining, isUnavailable } from './node-state.js';
import { OPTIONAL_SUB_COLLECTORS, SUB_COLLECTORS, type ClusterSnapshot, type SubCollector } from './snapshot.js';

export interface ClusterLandingMeta {
  readonly clusterName: string;
  readonly server: string;
  readonly version: string;
  readonly refreshSeconds: number;
  /** The sub-collectors this agent runs; the page says how to turn on the others. */
  readonly enabled: readonly SubCollector[];
}

/** How a state reads at a glance: the colour of its bar. */
export type Tone = 'ok' | 'busy' | 'warn' | 'bad' | 'other';

export interface StateCount {
  readonly state: string;
  readonly count: number;
  readonly tone: Tone;
}

export interface CollectorHealth {
  readonly runs: number;
  readonly errors: number;
  readonly skipped: number;
  readonly lastEndedAtMs?: number;
  readonly lastSuccessAtMs?: number;
  readonly lastDurationMs?: number;
  /** Since when slurmrestd has not served the sub-collector's endpoint (unset once it answers). */
  readonly absentSinceMs?: number;
}

export interface LandingError {
  readonly atMs: number;
  readonly collector: string;
  /** Already redacted. */
  readonly message: string;
}

/** Errors kept for the page, newest first. */
export const MAX_LANDING_ERRORS = 10;
/** An error echoed by a server can be long; the page shows its start. */
const MAX_ERROR_CHARS = 500;

/** Flags worth a separate bar: each changes what an operator does about the node. */
const NODE_FLAGS = ['DRAIN', 'NOT_RESPONDING', 'FAIL', 'MAINTENANCE', 'RESERVED', 'POWERED_DOWN'] as const;
const TONE_FILL: Readonly<Record<Tone, string>> = {
  ok: '#4caf50',
  busy: '#3f7fd0',
  warn: '#f0a030',
  bad: '#d0453a',
  other: '#999',
};
const BAD_JOB_STATES: ReadonlySet<string> = new Set([
  'FAILED',
  'TIMEOUT',
  'NODE_FAIL',
  'BOOT_FAIL',
  'DEADLINE',
  'OUT_OF_MEMORY',
]);

/** Base state plus the flags that matter, e.g. `IDLE+DRAIN`. */
export function nodeStateLabel(state: NodeState): string {
  return [baseState(state), ...NODE_FLAGS.filter((f) => hasStateWord(state, f))].join('+');
}

function nodeTone(state: NodeState): Tone {
  if (isUnavailable(state)) return 'bad';
  if (isDraining(state) || hasStateWord(state, 'DRAIN')) return 'warn';
  const base = baseState(state);
  return base === 'IDLE' ? 'ok' : base === 'ALLOCATED' || base === 'MIXED' ? 'busy' : 'other';
}

function jobTone(state: string): Tone {
  if (BAD_JOB_STATES.has(state)) return 'bad';
  return state === 'RUNNING' ? 'busy' : state === 'PENDING' ? 'warn' : state === 'COMPLETED' ? 'ok' : 'other';
}

/** Counts per label, largest first (then by name, so the page does not reorder between equal counts). */
function countBy<T>(items: readonly T[], label: (item: T) => string, tone: (item: T) => Tone): StateCount[] {
  // Counted in place: no object per item (100,000 jobs a tick).
  const counts = new Map<string, { state: string; count: number; tone: Tone }>();
  for (const item of items) {
    const state = label(item);
    const had = counts.get(state);
    if (had) had.count++;
    else counts.set(state, { state, count: 1, tone: tone(item) });
  }
  return [...counts.values()].sort((a, b) => b.count - a.count || a.state.localeCompare(b.state));
}

/**
 * What the page shows beyond the last tick, kept by the runner: per sub-collector health from
 * the loop's hooks, the last errors, and state counts (small; the snapshot itself is not kept).
 */
export class LandingRecord {
  private readonly health = new Map<SubCollector, CollectorHealth>();
  private errors: LandingError[] = [];
  private nodes: StateCount[] | undefined;
  private jobs: StateCount[] | undefined;

  runFinished(collector: SubCollector, endedAtMs: number, durationMs: number, err?: unknown): void {
    const { absentSinceMs: _answered, ...h } = this.collectorHealth(collector);
    const ok = err === undefined;
    this.health.set(collector, {
      ...h,
      runs: h.runs + 1,
      errors: h.errors + (ok ? 0 : 1),
      lastEndedAtMs: endedAtMs,
      lastDurationMs: durationMs,
      ...(ok ? { lastSuccessAtMs: endedAtMs } : {}),
    });
    if (!ok) this.error(collector, endedAtMs, err);
  }

  /** A run that found the endpoint missing: not an error, but the page says so until it answers. */
  absent(collector: SubCollector, endedAtMs: number, durationMs: number): void {
    const h = this.collectorHealth(collector);
    this.health.set(collector, {
      ...h,
      runs: h.runs + 1,
      lastEndedAtMs: endedAtMs,
      lastDurationMs: durationMs,
      absentSinceMs: h.absentSinceMs ?? endedAtMs,
    });
  }

  skipped(collector: SubCollector): void {
    const h = this.collectorHealth(collector);
    this.health.set(collector, { ...h, skipped: h.skipped + 1 });
  }

  /** Any other failure worth showing (publishing, ...); the message is redacted here. */
  error(collector: string, atMs: number, err: unknown): void {
    const raw = err instanceof Error ? err.message : String(err);
    const message = redactSecrets(raw).slice(0, MAX_ERROR_CHARS);
    this.errors = [{ atMs, collector, message }, ...this.errors].slice(0, MAX_LANDING_ERRORS);
  }

  /** Node and job states of the latest data (a sub-collector that has none yet keeps its counts unknown). */
  counted(snap: ClusterSnapshot): void {
    if (snap.nodes)
      this.nodes = countBy(
        snap.nodes.value,
        (n) => nodeStateLabel(n.state),
        (n) => nodeTone(n.state),
      );
    if (snap.jobs) this.jobs = countBy(snap.jobs.value, jobBaseState, (j) => jobTone(jobBaseState(j)));
  }

  collectorHealth(collector: SubCollector): CollectorHealth {
    return this.health.get(collector) ?? { runs: 0, errors: 0, skipped: 0 };
  }

  get lastErrors(): readonly LandingError[] {
    return this.errors;
  }

  get nodeStates(): readonly StateCount[] | undefined {
    return this.nodes;
  }

  get jobStates(): readonly StateCount[] | undefined {
    return this.jobs;
  }
}

const iso = (ms: number | undefined): string => (ms === undefined ? '—' : esc(new Date(ms).toISOString()));
const STYLE = '.bar{display:block}.num{text-align:right}';

export function renderClusterLanding(
  tick: TickSummary | undefined,
  meta: ClusterLandingMeta,
  record: LandingRecord = new LandingRecord(),
): string {
  const body = `<p>Soperator's Slurm exporter metrics for cluster <b>${esc(meta.clusterName)}</b>, read from slurmrestd at
<code>${esc(meta.server)}</code>. Version ${esc(meta.version)}.
Endpoints: <a href="/metrics">/metrics</a> · <a href="/health">/health</a>; self-monitoring on the monitoring port.</p>
<p>Last collection: ${tick ? esc(new Date(tick.atMs).toISOString()) : 'none yet'}.</p>
${renderStates('Node states', 'node-states', record.nodeStates)}
${renderStates('Jobs by state', 'job-states', record.jobStates)}
<h2>Sub-collectors</h2>
${renderCollectors(tick, record, meta.enabled)}
${renderErrors(record.lastErrors)}`;
  return page({
    title: `slurm-otel cluster agent · ${meta.clusterName}`,
    refreshSeconds: meta.refreshSeconds,
    body,
    style: STYLE,
  });
}

const BAR_WIDTH = 240;
const BAR_HEIGHT = 14;

function renderStates(title: string, id: string, counts: readonly StateCount[] | undefined): string {
  if (counts === undefined) return `<h2>${title}</h2>\n<p id="${id}">No data yet.</p>`;
  const total = counts.reduce((n, c) => n + c.count, 0);
  const rows = counts.map((c) => {
    const w = total === 0 ? 0 : Math.max(1, Math.round((c.count / total) * BAR_WIDTH));
    const bar =
      `<svg class="bar" width="${BAR_WIDTH}" height="${BAR_HEIGHT}" viewBox="0 0 ${BAR_WIDTH} ${BAR_HEIGHT}" role="img" aria-label="${esc(`${c.count} of ${total}`)}">` +
      `<rect x="0" y="0" width="${w}" height="${BAR_HEIGHT}" fill="${TONE_FILL[c.tone]}"/></svg>`;
    return `<tr data-state="${esc(c.state)}" data-count="${c.count}" data-tone="${c.tone}"><td>${esc(c.state)}</td><td class="num">${c.count}</td><td>${bar}</td></tr>`;
  });
  return `<h2>${title} (${total})</h2>
<table id="${id}"><thead><tr><th>state</th><th>count</th><th>share</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody></table>`;
}

/**
 * The switch that turns a sub-collector on, written out whole: --optional-collectors replaces the
 * list, so it names the ones already on too. A test keeps every flag named here a cluster option.
 */
export function howToTurnOn(name: SubCollector, enabled: readonly SubCollector[]): string | undefined {
  if (name === 'limits') return '--accounting-limits';
  if (!(OPTIONAL_SUB_COLLECTORS as readonly SubCollector[]).includes(name)) return undefined;
  const list = OPTIONAL_SUB_COLLECTORS.filter((c) => c === name || enabled.includes(c)).join(',');
  const how = `--optional-collectors ${list}`;
  return name === 'topology' ? `${how}, with Kubernetes access (--kubeconfig-path, or in a pod)` : how;
}

function offRow(name: SubCollector, enabled: readonly SubCollector[]): string {
  const how = howToTurnOn(name, enabled);
  const status = how === undefined ? 'off' : `off (how to turn on: <code>${esc(how)}</code>)`;
  const none = '<td>—</td>'.repeat(5) + '<td class="num">0</td>'.repeat(3);
  return `<tr data-collector="${esc(name)}" data-ok="false" data-off="true"><td>${esc(name)}</td><td>${status}</td>${none}</tr>`;
}

function renderCollectors(
  tick: TickSummary | undefined,
  record: LandingRecord,
  enabled: readonly SubCollector[],
): string {
  const rows = SUB_COLLECTORS.map((name) => {
    if (!enabled.includes(name)) return offRow(name, enabled);
    const got = tick?.collectors[name];
    const h = record.collectorHealth(name);
    const size = got === undefined ? '—' : got.items !== undefined ? `${got.items} items` : 'statistics';
    const failed = tick?.failed.includes(name) ?? false;
    const status =
      h.absentSinceMs !== undefined
        ? `not served by this slurmrestd since ${iso(h.absentSinceMs)}; asked again every ${ABSENT_RETRY_MS / 60_000} minutes`
        : failed
          ? '<span class="warn">failed; serving the last good data</span>'
          : got
            ? 'ok'
            : 'no data yet';
    const duration = h.lastDurationMs === undefined ? '—' : `${(h.lastDurationMs / 1000).toFixed(3)} s`;
    return (
      `<tr data-collector="${esc(name)}" data-ok="${!failed && got !== undefined}"${h.absentSinceMs !== undefined ? ' data-absent="true"' : ''}><td>${esc(name)}</td><td>${status}</td><td>${iso(got?.atMs)}</td><td>${size}</td>` +
      `<td>${iso(h.lastEndedAtMs)}</td><td>${iso(h.lastSuccessAtMs)}</td><td class="num">${duration}</td>` +
      `<td class="num" data-runs>${h.runs}</td><td class="num" data-errors>${h.errors}</td><td class="num" data-skipped>${h.skipped}</td></tr>`
    );
  }).join('\n');
  return `<table id="collectors"><thead><tr><th>sub-collector</th><th>last run</th><th>data from</th><th>size</th>
<th>last run ended</th><th>last success</th><th>duration</th><th>runs</th><th>errors</th><th>skipped (still in flight)</th></tr></thead>
<tbody>
${rows}
</tbody></table>`;
}

function renderErrors(errors: readonly LandingError[]): string {
  if (errors.length === 0) return '<h2>Last errors</h2>\n<p id="no-errors">None since the agent started.</p>';
  const rows = errors.map(
    (e) => `<tr><td>${iso(e.atMs)}</td><td>${esc(e.collector)}</td><td><code>${esc(e.message)}</code></td></tr>`,
  );
  return `<h2>Last errors</h2>
<table id="errors"><thead><tr><th>at</th><th>where</th><th>error (secrets redacted)</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody></table>`;
}
