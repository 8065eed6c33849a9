/** Markdown tables generated from a catalogue: the README quotes these, and a test keeps them in step. */
import { prometheusName, type MetricSpec } from './spec.js';

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
