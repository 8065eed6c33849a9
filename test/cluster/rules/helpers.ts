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

/**
 * The inputs of Soperator's TestMetricsCollector_Collect_Success: node-1 (allocated, 2 GPUs), node-2
 * (idle, drained) and job 12345, whose task id has no array job id (Soperator's ArrayJobID nil,
 * ArrayTaskID 42). `node1` adds to node-1's fields.
 */
export function collectSuccess(node1: Partial<SlurmNode> = {}): { nodes: SlurmNode[]; jobs: SlurmJob[] } {
  const nodes: SlurmNode[] = [
    node('node-1', ['ALLOCATED'], {
      instance_id: 'instance-1',
      tres: 'cpu=16,mem=191356M,gres/gpu=2',
      address: '10.0.0.1',
      partitions: ['gpu'],
      cpus: 16,
      alloc_cpus: 8,
      alloc_idle_cpus: 8,
      effective_cpus: 16,
      alloc_memory: 64000,
      real_memory: 191356,
      free_mem: 120000,
      specialized_memory: 0,
      ...node1,
    }),
    node('node-2', ['IDLE', 'DRAIN'], {
      instance_id: 'instance-2',
      tres: 'cpu=8,mem=64000M,gres/gpu=1',
      address: '10.0.0.2',
      partitions: ['main'],
      cpus: 8,
      alloc_cpus: 0,
      alloc_idle_cpus: 8,
      effective_cpus: 8,
      alloc_memory: 0,
      real_memory: 64000,
      free_mem: 50000,
      specialized_memory: 0,
    }),
  ];
  const jobs: SlurmJob[] = [
    job('12345', ['RUNNING'], {
      name: 'test_job',
      state_reason: 'None',
      partition: 'gpu',
      user_name: 'testuser',
      mail_user: 'testuser@example.com',
      user_id: 1000,
      standard_error: '/path/to/stderr',
      standard_output: '/path/to/stdout',
      nodes: 'node-[1,2]',
      array_task_id: '42',
      submit_time: 1722697200,
      start_time: 1722697230,
      tres_alloc_str: 'cpu=4,mem=64000M',
      cpus: 4,
    }),
  ];
  return { nodes, jobs };
}

/** Soperator's expected `slurm_job_info` labels of job 12345 in Collect_Success. */
export const COLLECT_SUCCESS_JOB_LABELS: Readonly<Record<string, string>> = {
  array_job_id: '',
  array_task_id: '42',
  end_time: '',
  finished_time: '',
  job_id: '12345',
  job_name: 'test_job',
  job_state: 'RUNNING',
  job_state_reason: 'None',
  slurm_partition: 'gpu',
  standard_error: '/path/to/stderr',
  standard_output: '/path/to/stdout',
  start_time: '1722697230',
  submit_time: '1722697200',
  user_id: '1000',
  user_mail: 'testuser@example.com',
  user_name: 'testuser',
};
