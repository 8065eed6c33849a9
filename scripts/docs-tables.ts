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
  const rows = specs.map((s) => {
    const cells = [`\`${prometheusName(s)}\``, s.kind, labels(s), values(s), defaultCell(s), escape(s.description)];
    return `| ${cells.join(' | ')} |`;
  });
  const header = ['| Prometheus name | type | labels | values | default | description |', '|---|---|---|---|---|---|'];
  return [...header, ...rows].join('\n');
}

const code = (words: readonly string[]): string => words.map((a) => `\`${a}\``).join(', ');
const escape = (text: string): string => text.replace(/\|/g, '\\|');

/** The required labels, then those an option adds. */
function labels(s: MetricSpec): string {
  const optional = s.optional ? `; with \`${s.optional.option}\`: ${code(s.optional.attributes)}` : '';
  return (code(s.attributes) || '—') + optional;
}

/** Every value of each label with a closed set, in the order of the labels; a dash when all are open. */
export function values(s: MetricSpec): string {
  const keys = [...s.attributes, ...(s.optional?.attributes ?? [])];
  const sets = keys.flatMap((k) => {
    const set = s.values?.[k];
    return set ? [`\`${k}\`: ${code(set.map((v) => (v === '' ? '""' : v)))}`] : [];
  });
  return escape(sets.join('; ')) || '—';
}

/** Whether the family is exported when the operator sets nothing, and the setting that switches it. */
export function defaultCell(s: MetricSpec): string {
  const sw = s.switchedBy;
  if (sw === undefined) return 'on';
  const setting =
    sw.value === undefined
      ? `\`${sw.option}\``
      : sw.listed
        ? `\`${sw.value}\` in \`${sw.option}\``
        : `\`${sw.option} ${sw.value}\``;
  return sw.byDefault ? `on (${setting}, the default)` : `off (on with ${setting})`;
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
      return `| \`${o.flags}\` | ${o.envVar ? `\`${o.envVar}\`` : '—'} | ${optionDefault(o)} | ${o.description} |`;
    });
  return ['| flag | environment | default | description |', '|---|---|---|---|', ...rows].join('\n');
}

/**
 * A literal default in code font; a default described in words (one that differs between machines,
 * such as the host name) as plain text; none as a dash.
 */
function optionDefault(o: Option): string {
  const described = o.defaultValueDescription;
  if (described !== undefined && /\s/.test(described)) return described;
  const def = described ?? (o.defaultValue === undefined ? undefined : JSON.stringify(o.defaultValue));
  return def === undefined ? '—' : `\`${def.replace(/^"|"$/g, '')}\``;
}
