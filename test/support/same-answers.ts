/**
 * The questions users ask of the stored data — every dashboard panel's query and every alert
 * rule's expression — put to two Prometheus servers that received the same agents' data by two
 * paths (a direct scrape, the Collector's remote write): the answers must be the same, series for
 * series and value for value.
 */
import fs from 'node:fs';
import { parse } from 'yaml';
import { demoQueries, loadDashboards } from './dashboards.js';
import type { PrometheusServer } from './prometheus.js';
import { waitFor } from './tools.js';

const DASHBOARDS = 'otel-config/grafana/dashboards';
const ALERT_RULES = 'otel-config/prometheus/alerts.yml';

export interface Question {
  readonly what: string;
  readonly promql: string;
}

/** Names of the metrics an expression reads (label names and functions are not metrics). */
export function metricNames(promql: string): string[] {
  const names = promql.match(/\b(?:ib_slurm_\w+|slurm_\w+|target_info|up|process_\w+|nodejs_\w+|otelcol_\w+)\b/g);
  return [...new Set((names ?? []).filter((n) => n !== 'slurm_cluster'))];
}

/** Every dashboard query and alert expression that reads only metrics `carried` says both paths hold. */
export function questionsOver(carried: (name: string) => boolean): Question[] {
  const panels = loadDashboards(DASHBOARDS).flatMap((d) =>
    demoQueries(d).map((q) => ({ what: `${d.file}: ${q.panel} [${q.refId}]`, promql: q.promql })),
  );
  const rules = (
    parse(fs.readFileSync(ALERT_RULES, 'utf8')) as {
      groups: { rules: { alert?: string; record?: string; expr: string }[] }[];
    }
  ).groups
    .flatMap((g) => g.rules)
    .map((r) => ({ what: r.alert ? `alert ${r.alert}` : `record ${r.record}`, promql: r.expr }));
  return [...panels, ...rules].filter((q) => {
    const names = metricNames(q.promql);
    return names.length > 0 && names.every(carried);
  });
}

/** One answer as comparable, sorted lines. */
async function answer(prom: PrometheusServer, promql: string): Promise<string[]> {
  return (await prom.query(promql))
    .map((r) => `${JSON.stringify(Object.entries(r.metric).sort(([a], [b]) => a.localeCompare(b)))} ${r.value[1]}`)
    .sort();
}

export interface Comparison {
  /** The questions whose answers still differed at the deadline, each with both answers. */
  readonly differing: string[];
  /** How many questions both answered with the same series (not nothing). */
  readonly answered: number;
}

/**
 * Asks both servers every question until all answers agree or `deadlineMs` is up (remote write
 * lags a scrape, so a question is asked again until its answers agree). An answer of nothing from
 * both agrees (an alert's expression over healthy data), but is not counted as answered.
 */
export async function compareAnswers(
  a: PrometheusServer,
  b: PrometheusServer,
  questions: readonly Question[],
  deadlineMs = 90_000,
): Promise<Comparison> {
  let open = [...questions];
  let answered = 0;
  const last = new Map<string, string>();
  await waitFor(
    'the same answers from both stores',
    async () => {
      const still: Question[] = [];
      for (const q of open) {
        const [x, y] = [await answer(a, q.promql), await answer(b, q.promql)];
        if (JSON.stringify(x) === JSON.stringify(y)) {
          if (x.length > 0) answered++;
          continue;
        }
        still.push(q);
        last.set(q.what, `${q.promql}\n    one:   ${x.join('\n           ')}\n    other: ${y.join('\n           ')}`);
      }
      open = still;
      return open.length === 0;
    },
    deadlineMs,
  ).catch(() => undefined);
  return { differing: open.map((q) => `${q.what}: ${last.get(q.what) ?? ''}`), answered };
}
