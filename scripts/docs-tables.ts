/**
 * What the documentation quotes from the code's own declarations, as Markdown: the metric tables
 * (one per catalogue, in docs/metrics.md) and the option tables (from the commands' option
 * definitions, in docs/configuration.md). `npm run docs` writes them; test/docs/tables.test.ts
 * keeps them in step.
 */
import type { Command, Option } from 'commander';
import {
  CLUSTER_EVENT_METRICS,
  CLUSTER_METRICS,
  CLUSTER_SELF_METRICS,
  EXTRA_SPECS,
  NATIVE_NODE_SHARED_METRICS,
  NATIVE_SPECS,
  NATIVE_USER_ACCOUNT_SPECS,
} from '../src/cluster/metrics.js';
import { NODE_METRICS, NODE_SELF_METRICS } from '../src/node/metrics.js';
import { HTTP_GUARD_METRICS } from '../src/telemetry/http-metrics.js';
import { PROCESS_METRICS } from '../src/telemetry/process-metrics.js';
import { prometheusName, type MetricSpec } from '../src/telemetry/spec.js';

/** The pages holding generated sections, from the repository root. */
export const DOC_FILES = {
  metrics: 'docs/metrics.md',
  configuration: 'docs/configuration.md',
  /** The alert thresholds and runbook (scripts/alerts.ts). */
  operations: 'docs/operations.md',
  /** The recording rules of the job usage (scripts/alerts.ts), in "Job usage". */
  nodeAgent: 'docs/node-agent.md',
} as const;

/** Every agent's catalogue, by section of DOC_FILES.metrics. */
export const DOC_TABLES: Readonly<Record<string, readonly MetricSpec[]>> = {
  'node-metrics': Object.values(NODE_METRICS),
  'node-self-metrics': Object.values(NODE_SELF_METRICS),
  'cluster-metrics': [...Object.values(CLUSTER_METRICS), ...Object.values(CLUSTER_EVENT_METRICS)],
  'cluster-native-metrics': NATIVE_SPECS,
  'cluster-native-shared-metrics': Object.values(NATIVE_NODE_SHARED_METRICS),
  'cluster-native-user-account-metrics': NATIVE_USER_ACCOUNT_SPECS,
  'cluster-extra-metrics': EXTRA_SPECS,
  'cluster-self-metrics': Object.values(CLUSTER_SELF_METRICS),
  'process-metrics': Object.values(PROCESS_METRICS),
  'http-guard-metrics': Object.values(HTTP_GUARD_METRICS),
};

export function metricsTable(specs: readonly MetricSpec[]): string {
  const rows = specs.map(
    (s) => `| \`${prometheusName(s)}\` | ${s.kind} | ${labels(s)} | ${s.description.replace(/\|/g, '\\|')} |`,
  );
  return ['| Prometheus name | type | labels | description |', '|---|---|---|---|', ...rows].join('\n');
}

/** The required labels, then those an option adds. */
function labels(s: MetricSpec): string {
  const code = (keys: readonly string[]): string => keys.map((a) => `\`${a}\``).join(', ');
  const optional = s.optional ? `; with \`${s.optional.option}\`: ${code(s.optional.attributes)}` : '';
  return (code(s.attributes) || '—') + optional;
}

/** Replaces the text between `<!-- begin:KEY -->` and `<!-- end:KEY -->`. */
export function replaceSection(doc: string, key: string, body: string): string {
  const begin = `<!-- begin:${key} -->`;
  const end = `<!-- end:${key} -->`;
  const i = doc.indexOf(begin);
  const j = doc.indexOf(end);
  if (i < 0 || j < i) throw new Error(`section ${key} not found`);
  return `${doc.slice(0, i + begin.length)}\n${body}\n${doc.slice(j)}`;
}

export function section(doc: string, key: string): string | undefined {
  const m = new RegExp(`<!-- begin:${key} -->\\n([\\s\\S]*?)\\n<!-- end:${key} -->`).exec(doc);
  return m?.[1];
}

/** A command's options as a table: flag, environment variable, default, description. */
export function optionsTable(cmd: Command): string {
  const rows = cmd.options
    .filter((o) => o.long !== '--help' && o.long !== '--version' && !o.hidden)
    .map((o) => {
      return `| \`${o.flags}\` | ${o.envVar ? `\`${o.envVar}\`` : '—'} | ${defaultCell(o)} | ${o.description} |`;
    });
  return ['| flag | environment | default | description |', '|---|---|---|---|', ...rows].join('\n');
}

/**
 * A literal default in code font; a default described in words (one that differs between machines,
 * such as the host name) as plain text; none as a dash.
 */
function defaultCell(o: Option): string {
  const described = o.defaultValueDescription;
  if (described !== undefined && /\s/.test(described)) return described;
  const def = described ?? (o.defaultValue === undefined ? undefined : JSON.stringify(o.defaultValue));
  return def === undefined ? '—' : `\`${def.replace(/^"|"$/g, '')}\``;
}
