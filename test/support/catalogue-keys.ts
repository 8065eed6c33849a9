/**
 * Run-time check that points carry exactly their family's keys: every required key, and the
 * optional ones all together when their option is on, none when it is off; and that a key with a
 * closed set of values has one of them. The compiler checks points built with `point()`; this
 * checks what reaches the exposition, whatever built it (a cast included).
 */
import { DOC_TABLES } from '../../scripts/docs-tables.js';
import { materialized, prometheusName, type AnyFamily, type MetricSpec } from '../../src/telemetry/spec.js';
import type { Sample } from './exposition.js';

/** Why a point's keys are wrong for its family, or undefined when they are right. */
export function keyError(spec: MetricSpec, keys: readonly string[], optionalOn: boolean): string | undefined {
  const expected = [...spec.attributes, ...(optionalOn ? (spec.optional?.attributes ?? []) : [])].sort();
  const got = [...keys].sort();
  if (expected.length === got.length && expected.every((k, i) => k === got[i])) return undefined;
  return `${spec.name}: keys ${got.join(',') || '(none)'}, expected ${expected.join(',') || '(none)'}`;
}

/** Why a point's value of a closed key is not one the family declares, or undefined. */
export function valueError(spec: MetricSpec, labels: Readonly<Record<string, string>>): string | undefined {
  for (const [key, set] of Object.entries(spec.values ?? {})) {
    const v = labels[key];
    if (v !== undefined && set !== undefined && !set.includes(v))
      return `${spec.name}: ${key}="${v}", not one of ${set.join(',')}`;
  }
  return undefined;
}

/** Every wrong point of the families, one line each (the first few per family). */
export function familyKeyErrors(families: readonly AnyFamily[], optionalOn = false): string[] {
  return families.flatMap((fam) => {
    const errors = materialized(fam).points.map(
      (p) => keyError(fam.spec, Object.keys(p.attributes), optionalOn) ?? valueError(fam.spec, p.attributes),
    );
    return [...new Set(errors.filter((e) => e !== undefined))].slice(0, 3);
  });
}

/** What /metrics serves: the four names /metrics/nodes uses with slurmctld's labels mean Soperator's here. */
const BY_NAME = new Map(
  Object.entries(DOC_TABLES)
    .filter(([table]) => table !== 'cluster-native-shared-metrics')
    .flatMap(([, specs]) => specs.map((s) => [prometheusName(s), s] as const)),
);

/** The family of an exposition sample, histogram series (`_bucket`, `_sum`, `_count`) included. */
function specOf(name: string): { spec: MetricSpec; bucket: boolean } | undefined {
  const spec = BY_NAME.get(name);
  if (spec) return { spec, bucket: false };
  const base = BY_NAME.get(name.replace(/_(bucket|sum|count)$/, ''));
  return base?.kind === 'histogram' ? { spec: base, bucket: name.endsWith('_bucket') } : undefined;
}

/**
 * Every wrong sample of an exposition; a sample of no catalogued family is wrong too (target_info,
 * the resource, is not a family). `le` is the exposition's own label on histogram buckets.
 */
export function expositionKeyErrors(samples: readonly Sample[], optionalOn = false): string[] {
  const errors = new Set<string>();
  for (const s of samples) {
    if (s.name === 'target_info') continue;
    const found = specOf(s.name);
    if (!found) {
      errors.add(`${s.name}: not in any catalogue`);
      continue;
    }
    const keys = Object.keys(s.labels).filter((k) => !(found.bucket && k === 'le'));
    const e = keyError(found.spec, keys, optionalOn) ?? valueError(found.spec, s.labels);
    if (e) errors.add(e);
  }
  return [...errors];
}
