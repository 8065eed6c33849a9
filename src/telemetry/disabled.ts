/**
 * Families an operator turns off (`--disable-metrics`): the names are checked against the agent's
 * own catalogue once, at start-up, and the pipeline then drops those families on every path (the
 * Prometheus endpoint and its sections, OTLP). Only data families can be turned off: the
 * self-monitoring families are how an operator sees that the agent works, so they always stay.
 */
import { prometheusName, type MetricSpec } from './spec.js';

/** What an agent may turn off, and what it refuses to. */
export interface DisableCatalogue {
  /** The agent's data families (snapshot and event families). */
  readonly data: readonly MetricSpec[];
  /** Its self-monitoring families: known names, refused. */
  readonly self: readonly MetricSpec[];
}

/** A name that is not a data family of the agent; the message names it (and the nearest, if close). */
export class DisableMetricsError extends Error {}

/**
 * The OTLP names of the families `list` names: comma-separated, each by its Prometheus name (as
 * docs/metrics.md lists it) or its OTLP name; blanks and `none` mean none.
 */
export function disabledFamilies(list: string, catalogue: DisableCatalogue): ReadonlySet<string> {
  const data = byEitherName(catalogue.data);
  const self = byEitherName(catalogue.self);
  const out = new Set<string>();
  for (const raw of list.split(',')) {
    const name = raw.trim();
    if (name === '' || name.toLowerCase() === 'none') continue;
    const spec = data.get(name);
    if (spec) {
      out.add(spec.name);
      continue;
    }
    if (self.has(name)) throw new DisableMetricsError(`${name} is a self-monitoring family: it cannot be disabled`);
    throw new DisableMetricsError(unknownMessage(name, catalogue.data));
  }
  return out;
}

/** Each family under both the names it is known by. */
function byEitherName(specs: readonly MetricSpec[]): Map<string, MetricSpec> {
  const m = new Map<string, MetricSpec>();
  for (const s of specs) {
    m.set(s.name, s);
    m.set(prometheusName(s), s);
  }
  return m;
}

function unknownMessage(name: string, data: readonly MetricSpec[]): string {
  const near = nearestName(name, data.map(prometheusName));
  return `unknown metric family ${name}${near === undefined ? '' : ` (did you mean ${near}?)`}`;
}

/**
 * The known name closest to `name` by edit distance, when it is close enough to be a slip (a third
 * of the name's length at most); undefined otherwise, so an unrelated name gets no odd suggestion.
 */
export function nearestName(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(1, Math.floor(name.length / 3)) + 1;
  for (const k of known) {
    const d = editDistance(name, k);
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best;
}

/** Levenshtein distance, one row at a time. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost));
    }
    prev = row;
  }
  return prev[b.length] as number;
}
