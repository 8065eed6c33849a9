/**
 * Decoders for the data_parser API family v0.0.39–v0.0.45 (Slurm 23.02–26.05).
 *
 * What this family changed from v0.0.38: node `state` and `job_state` are arrays (base state
 * first) and `state_flags` is gone; many numbers are `{set, infinite, number}` structs (which ones
 * differs between v0.0.39/v0.0.40 and later, so every number is read in either form);
 * `free_memory` became `free_mem`, `idle_cpus` became `alloc_idle_cpus`, `slurmd_version`
 * became `version`; exit codes are `{status[], return_code, signal{id,name}}`. slurmdbd jobs carry
 * `state.current[]`, `time.*` plain ints with a no-val `time.limit`, `required.memory_per_node`
 * / `memory_per_cpu`, stdout/stderr (v0.0.41+), and TRES as `{type,name,id,count}` arrays.
 *
 * Every function takes an already parsed JSON value of unknown shape and never throws.
 */
import type { Decoded, ItemResult, SlurmJob, SlurmNode } from '../model.js';
import {
  ACCOUNTING_COMMON_MEMBERS,
  accountingArray,
  accountingCommon,
  NODE_COMMON_MEMBERS,
  nodeCommon,
  NOT_AN_OBJECT,
  type MemberOf,
  type Wire,
} from './common.js';
import { decodeJob } from './decode-job.js';
import { decodeList } from './envelope.js';
import { count, field, idString, isRecord } from './read.js';
import { exitCode, jobState, nodeState, text } from './states.js';

export { decodeDiag } from './common.js';
// The controller's job reads the same members in every version.
export { decodeJob };

/**
 * The top-level members each element decoder reads (typed: reading another one does not compile).
 * The stream reader parses only these, so the ~100 members of a job the model does not use (and
 * `job_resources`, the bulk of a job object) are skipped without being decoded.
 */
const NODE_MEMBERS = [
  ...NODE_COMMON_MEMBERS,
  'name',
  'state',
  'alloc_idle_cpus',
  'effective_cpus',
  'free_mem',
  'version',
] as const;
const ACCOUNTING_JOB_MEMBERS = [
  ...ACCOUNTING_COMMON_MEMBERS,
  'job_id',
  'array',
  'stderr',
  'stderr_expanded',
  'stdout',
  'stdout_expanded',
  'required',
  'exit_code',
] as const;

export function decodeNode(element: unknown): ItemResult<SlurmNode> {
  if (!isRecord(element)) return NOT_AN_OBJECT;
  const v: Wire<MemberOf<typeof NODE_MEMBERS>> = element;
  const name = text(v['name']);
  if (name === undefined) return { ok: false, reason: 'node without a name' };
  const node: SlurmNode = {
    name,
    ...nodeCommon(v),
    state: nodeState(v['state']),
    alloc_idle_cpus: count(v['alloc_idle_cpus']),
    effective_cpus: count(v['effective_cpus']),
    free_mem: count(v['free_mem']),
    slurmd_version: text(v['version']),
  };
  return { ok: true, item: node };
}

decodeNode.members = NODE_MEMBERS;

export function decodeAccountingJob(element: unknown): ItemResult<SlurmJob> {
  if (!isRecord(element)) return NOT_AN_OBJECT;
  const v: Wire<MemberOf<typeof ACCOUNTING_JOB_MEMBERS>> = element;
  const jobId = idString(v['job_id']);
  if (jobId === undefined) return { ok: false, reason: 'job without a job_id' };
  const required = v['required'];
  const job: SlurmJob = {
    source: 'accounting',
    job_id: jobId,
    ...accountingCommon(v),
    ...accountingArray(v['array']),
    state: jobState(field(v['state'], 'current')),
    standard_error: text(v['stderr']) ?? text(v['stderr_expanded']),
    standard_output: text(v['stdout']) ?? text(v['stdout_expanded']),
    // The per-task minimum: the last CPU fallback, after allocated and requested TRES.
    cpus: count(field(required, 'CPUs'), { u32: true }),
    memory_per_node: count(field(required, 'memory_per_node')),
    memory_per_cpu: count(field(required, 'memory_per_cpu')),
    exit_code: exitCode(v['exit_code']),
  };
  return { ok: true, item: job };
}
decodeAccountingJob.members = ACCOUNTING_JOB_MEMBERS;

export function decodeNodes(body: unknown): Decoded<SlurmNode> {
  return decodeList(body, 'nodes', decodeNode);
}

export function decodeJobs(body: unknown): Decoded<SlurmJob> {
  return decodeList(body, 'jobs', decodeJob);
}

export function decodeAccountingJobs(body: unknown): Decoded<SlurmJob> {
  return decodeList(body, 'jobs', decodeAccountingJob);
}
