/** Builders shared by the cluster rules tests: nodes and jobs from state words, snapshots from a fake clock. */
import { nodeState } from '../../../src/cluster/api/decode/states.js';
import type { Decoded, SlurmDiag, SlurmJob, SlurmNode } from '../../../src/cluster/model.js';
import type { ClusterSnapshot } from '../../../src/cluster/snapshot.js';
import {
  materialized,
  type AnyFamily,
  type Family,
  type MetricEvent,
  type Point,
} from '../../../src/telemetry/spec.js';

export const T0 = Date.UTC(2025, 10, 24, 12, 0, 0);

export function node(name: string, words: readonly string[], extra: Partial<SlurmNode> = {}): SlurmNode {
  return { name, state: nodeState([...words]), partitions: [], ...extra };
}

export function job(job_id: string, state: readonly string[], extra: Partial<SlurmJob> = {}): SlurmJob {
  return { source: 'controller', job_id, state, nodes: '', ...extra };
}

export interface Refresh {
  readonly atMs: number;
  readonly seq: number;
  readonly nodes?: readonly SlurmNode[];
  readonly jobs?: readonly SlurmJob[];
  readonly diag?: SlurmDiag;
}

export function snapshot(r: Refresh): ClusterSnapshot {
  return {
    atMs: r.atMs,
    ...(r.nodes ? { nodes: { value: r.nodes, atMs: r.atMs, seq: r.seq } } : {}),
    ...(r.jobs ? { jobs: { value: r.jobs, atMs: r.atMs, seq: r.seq } } : {}),
    ...(r.diag ? { diag: { value: r.diag, atMs: r.atMs, seq: r.seq } } : {}),
  };
}

export function ok<T>(d: Decoded<T>): readonly T[] {
  if (!d.ok) throw new Error(`decode failed: ${d.message}`);
  return d.items;
}

/** The family named `name`, its points in an array (lazy families are made here). */
export function fam(families: readonly AnyFamily[], name: string): Family {
  const f = families.find((x) => x.spec.name === name);
  if (f === undefined) throw new Error(`family ${name} not emitted`);
  return materialized(f);
}

/** The points of a counter or gauge family. */
export function points(families: readonly AnyFamily[], name: string): readonly Point[] {
  const f = fam(families, name);
  if (f.spec.kind === 'histogram') throw new Error(`${name} is a histogram`);
  return f.points as readonly Point[];
}

/** Points of a family as `key → value`, the key being the given attribute's value. */
export function valuesBy(families: readonly AnyFamily[], name: string, key: string): Record<string, number> {
  return Object.fromEntries(points(families, name).map((p) => [p.attributes[key] ?? '?', Number(p.value)]));
}

export function eventsOf(events: readonly MetricEvent[], name: string): MetricEvent[] {
  return events.filter((e) => e.spec.name === name);
}
