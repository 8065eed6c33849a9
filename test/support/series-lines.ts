/**
 * Series as comparable text, for the tests that check what a store or a Collector holds against an
 * agent's direct /metrics: one line per sample (name, sorted labels, value), the mapping every push
 * path documents (deploy/README.md), and a wait until the lines agree.
 */
import { expect } from 'vitest';
import type { Sample } from './exposition.js';
import { waitFor } from './tools.js';

/**
 * One sample as a comparable line: name, sorted labels, value. `stored`: as a store holds it,
 * without the labels whose value is empty (a scrape of the agent drops them too).
 */
export function line(
  name: string,
  labels: Readonly<Record<string, string>>,
  value: number | string,
  stored = false,
): string {
  const l = Object.entries(labels)
    .filter(([, v]) => !stored || v !== '')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(',');
  return `${name}{${l}} ${Number(value)}`;
}

export interface PushedAs {
  /** The agent's service.name, which becomes `job`. */
  readonly job: string;
  /** Its host.name, which becomes `instance`. */
  readonly instance: string;
  /** The `slurm_cluster` the path adds. */
  readonly cluster: string;
  /** As a store holds the lines (empty labels dropped). */
  readonly stored?: boolean;
  /** Whether the path writes target_info (a Collector does; VictoriaMetrics's OTLP intake does not). */
  readonly targetInfo?: boolean;
}

/**
 * What a push path must deliver for one agent's direct scrape: every family keeps its name,
 * labels and value; each series gains job, instance and slurm_cluster; target_info's service_name
 * label becomes job and its host_name stays.
 */
export function expectedFromDirect(direct: readonly Sample[], p: PushedAs): string[] {
  const added = { job: p.job, instance: p.instance, slurm_cluster: p.cluster };
  return direct.flatMap((s) => {
    if (s.name !== 'target_info') return [line(s.name, { ...s.labels, ...added }, s.value, p.stored)];
    if (p.targetInfo === false) return [];
    const { service_name: service, ...rest } = s.labels;
    expect(service).toBe(p.job);
    return [line(s.name, { ...rest, ...added }, s.value, p.stored)];
  });
}

/** The node agent's families and target_info. */
export const ours = (name: string): boolean => name.startsWith('ib_slurm_') || name === 'target_info';

/**
 * Waits until `actual()` equals `expected` (both sorted; `normalize` may first map the actual lines
 * onto the expected ones, e.g. for a store's rounding), then asserts it (a timeout shows the last
 * difference).
 */
export async function eventuallyEqual(
  what: string,
  expected: readonly string[],
  actual: () => Promise<string[]>,
  normalize: (actual: string[], expected: readonly string[]) => string[] = (a) => a,
): Promise<void> {
  const want = [...expected].sort();
  let last: string[] = [];
  await waitFor(
    what,
    async () => {
      last = normalize(await actual(), want).sort();
      return JSON.stringify(last) === JSON.stringify(want);
    },
    90_000,
  ).catch(() => undefined);
  expect(last, what).toEqual(want);
}
