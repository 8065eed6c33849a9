/**
 * docs/metrics.md says which tables `--disable-metrics` can empty (the data tables) and which it
 * cannot (self-monitoring): each agent's check at start-up agrees with the tables, name by name.
 */
import { describe, expect, it } from 'vitest';
import { DOC_TABLES } from '../../scripts/docs-tables.js';
import { clusterDisabledMetrics, nodeDisabledMetrics } from '../../src/cli/disable-metrics.js';
import { prometheusName } from '../../src/telemetry/spec.js';

const SELF_TABLES = ['node-self-metrics', 'cluster-self-metrics', 'process-metrics', 'http-guard-metrics'];
const names = (keys: readonly string[]): string[] => keys.flatMap((k) => (DOC_TABLES[k] ?? []).map(prometheusName));
const dataKeys = Object.keys(DOC_TABLES).filter((k) => !SELF_TABLES.includes(k));

describe('docs/metrics.md and --disable-metrics', () => {
  it('every table is a data table of one agent or a self-monitoring table', () => {
    expect(dataKeys.every((k) => k === 'node-metrics' || k.startsWith('cluster-'))).toBe(true);
    expect(SELF_TABLES.every((k) => k in DOC_TABLES)).toBe(true);
  });

  it('each agent can disable every family of its data tables, and no other agent’s', () => {
    const node = names(['node-metrics']);
    const cluster = names(dataKeys.filter((k) => k !== 'node-metrics'));
    for (const n of node) expect(nodeDisabledMetrics(n)?.size, n).toBe(1);
    for (const n of cluster) expect(clusterDisabledMetrics(n)?.size, n).toBeGreaterThanOrEqual(1);
    for (const n of cluster.slice(0, 5)) expect(() => nodeDisabledMetrics(n), n).toThrow(/unknown metric family/);
    for (const n of node.slice(0, 5)) expect(() => clusterDisabledMetrics(n), n).toThrow(/unknown metric family/);
  });

  it('no agent disables a family of the self-monitoring tables', () => {
    for (const n of names(SELF_TABLES)) {
      const refused = new RegExp(`${n} is a self-monitoring family|unknown metric family ${n}`);
      expect(() => nodeDisabledMetrics(n), n).toThrow(refused);
      expect(() => clusterDisabledMetrics(n), n).toThrow(refused);
    }
  });
});
