/**
 * Decoders for the openapi plugin family v0.0.36–v0.0.38 (Slurm 20.11–23.11).
 *
 * Shape of this family: plain numbers (an unset value is `null`, occasionally a raw NO_VAL);
 * node `state` is one lower-case base word (`idle`, `mixed`) with flags in `state_flags[]`
 * (v0.0.37+); `free_memory`, `idle_cpus`, `slurmd_version`; `job_state` is a string; the
 * controller's `exit_code` is the raw wait status (768 = exit 3). v0.0.36 nodes lack
 * `state_flags`, `alloc_cpus`, `alloc_memory` and `partitions`: those read as undefined/empty.
 * slurmdbd (dbv0.0.38) jobs: `state.current` is a string, `time.limit` a plain number or null,
 * `required.memory` MiB, `exit_code.status` a string, and a pending array master's `array.task`
 * is a hex bitmap (`0xF0` = tasks 4–7).
 *
 * The readers also accept the v0.0.4x number structs, so a mixed or proxied response still
 * decodes. Every function takes an already parsed JSON value and never throws.
 */
import type { Decoded, ItemResult, SlurmJob, SlurmNode } from '../model.js';
import { accountingArray, accountingCommon, nodeCommon, NOT_AN_OBJECT } from './common.js';
import { decodeJob } from './decode-job.js';
import { decodeList } from './envelope.js';
import { count, field, idString, isRecord } from './read.js';
import { exitCode, jobState, nodeState, text } from './states.js';

export { decodeDiag } from './common.js';
// The controller's job reads the same members in every version.
export { decodeJob };

export function decodeNode(v: unknown): ItemResult<SlurmNode> {
  if (!isRecord(v)) return NOT_AN_OBJECT;
  const name = text(v['name']);
  if (name === undefined) return { ok: false, reason: 'node without a name' };
  const node: SlurmNode = {
    name,
    ...nodeCommon(v),
    state: nodeState(v['state'], v['state_flags']),
    alloc_idle_cpus: count(v['idle_cpus']),
    free_mem: count(v['free_memory']),
    slurmd_version: text(v['slurmd_version']),
  };
  return { ok: true, item: node };
}

export function decodeAccountingJob(v: unknown): ItemResult<SlurmJob> {
  if (!isRecord(v)) return NOT_AN_OBJECT;
  const jobId = idString(v['job_id']);
  if (jobId === undefined) return { ok: false, reason: 'job without a job_id' };
  const job: SlurmJob = {
    source: 'accounting',
    job_id: jobId,
    ...accountingCommon(v),
    ...accountingArray(v['array']),
    state: jobState(field(v['state'], 'current')),
    // dbv0.0.38 has one `required.memory` (MiB per node, as --mem gives it).
    memory_per_node: count(field(v['required'], 'memory')),
    cpus: count(field(v['required'], 'CPUs'), { u32: true }),
    exit_code: exitCode(v['exit_code']),
  };
  return { ok: true, item: job };
}

export function decodeNodes(body: unknown): Decoded<SlurmNode> {
  return decodeList(body, 'nodes', decodeNode);
}

export function decodeJobs(body: unknown): Decoded<SlurmJob> {
  return decodeList(body, 'jobs', decodeJob);
}

export function decodeAccountingJobs(body: unknown): Decoded<SlurmJob> {
  return decodeList(body, 'jobs', decodeAccountingJob);
}
