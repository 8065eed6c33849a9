/**
 * The cluster agent's /metrics as Soperator's collector tests read theirs: refreshes go through
 * state and the telemetry pipeline (events included), and the exposition is parsed back into
 * typed series, so a test can assert a series with exactly Soperator's label set.
 */
import { expect } from 'vitest';
import { CLUSTER_EVENT_SPECS } from '../../../src/cluster/metrics.js';
import { observe } from '../../../src/cluster/observe.js';
import type { ClusterSnapshot } from '../../../src/cluster/snapshot.js';
import { advance, INITIAL_CLUSTER_STATE, type ClusterState } from '../../../src/cluster/state.js';
import { Pipeline } from '../../../src/telemetry/pipeline.js';
import { parseExposition } from '../../support/exposition.js';
import { silentLogger } from '../../support/log.js';

export type Labels = Record<string, string>;
export interface Series {
  readonly type: string;
  readonly name: string;
  readonly labels: Labels;
  readonly value: number;
}

/** One refresh after another through state and pipeline, as the agent publishes them. */
export class Agent {
  private state: ClusterState = INITIAL_CLUSTER_STATE;
  /** The exposition of the last refresh, as /metrics serves it. */
  text = '';
  private readonly pipeline = new Pipeline({
    resource: { serviceName: 'slurm-otel-cluster', serviceVersion: 'test', hostName: 'test' },
    scope: { name: 'test', version: '0' },
    logger: silentLogger(),
    eventSpecs: CLUSTER_EVENT_SPECS,
  });

  async refresh(snap: ClusterSnapshot): Promise<Series[]> {
    const next = advance(this.state, snap);
    this.state = next.state;
    this.pipeline.record(next.events);
    await this.pipeline.publish(observe(snap, snap.atMs), snap.atMs);
    const text = (this.text = this.pipeline.exposition.text);
    const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]));
    return parseExposition(text).map((s) => ({
      type: (types.get(s.name) ?? types.get(s.name.replace(/_(bucket|sum|count)$/, '')) ?? '').toUpperCase(),
      name: s.name,
      labels: s.labels,
      value: s.value,
    }));
  }

  async shutdown(): Promise<void> {
    await this.pipeline.shutdown();
  }
}

/** Soperator's assertion: a series of this type, name and exactly these labels, with this value. */
export function expectSeries(all: readonly Series[], type: string, name: string, labels: Labels, value?: number): void {
  const same = all.filter((s) => s.name === name && sameLabels(s.labels, labels));
  expect(same, `${type}; ${name}${JSON.stringify(labels)}`).toHaveLength(1);
  expect(same[0]?.type).toBe(type);
  if (value !== undefined) expect(same[0]?.value, name).toBe(value);
}

function sameLabels(a: Labels, b: Labels): boolean {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && a[k] === b[k]);
}

/** Soperator's assertMetricHasLabels: some series carries all of these labels. */
export function expectSomeWith(all: readonly Series[], labels: Labels): void {
  expect(
    all.some((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v)),
    JSON.stringify(labels),
  ).toBe(true);
}
