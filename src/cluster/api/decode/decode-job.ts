/**
 * The controller's job (`/slurm/vX/jobs/`), one decoder for every API version v0.0.36–v0.0.45:
 * the members it reads have the same names in both families, and the readers it uses accept both
 * shapes (`job_state` a string or an array; `exit_code` a raw wait status or a struct; numbers
 * plain or in `{set, infinite, number}` structs). Takes a parsed JSON value; never throws.
 */
import type { ItemResult, SlurmJob } from '../../model.js';
import {
  JOB_ARRAY_MEMBERS,
  JOB_COMMON_MEMBERS,
  jobArray,
  jobCommon,
  NOT_AN_OBJECT,
  type MemberOf,
  type Wire,
} from './common.js';
import { idString, isRecord } from '../json/read.js';
import { exitCode, jobState } from './states.js';
import { readGresDetail } from './gres-detail.js';

/**
 * The top-level members decodeJob reads (typed: reading another one does not compile). The stream
 * reader parses only these, so the ~100 members of a job the model does not use (and
 * `job_resources`, the bulk of a job object) are skipped without being decoded.
 */
const JOB_MEMBERS = [
  ...JOB_COMMON_MEMBERS,
  ...JOB_ARRAY_MEMBERS,
  'job_id',
  'job_state',
  'exit_code',
  'gres_detail',
] as const;

export function decodeJob(element: unknown): ItemResult<SlurmJob> {
  if (!isRecord(element)) return NOT_AN_OBJECT;
  const v: Wire<MemberOf<typeof JOB_MEMBERS>> = element;
  const jobId = idString(v['job_id']);
  if (jobId === undefined) return { ok: false, reason: 'job without a job_id' };
  const job: SlurmJob = {
    source: 'controller',
    job_id: jobId,
    ...jobCommon(v),
    ...jobArray(v),
    state: jobState(v['job_state']),
    exit_code: exitCode(v['exit_code']),
    gres_detail: readGresDetail(v['gres_detail']),
  };
  return { ok: true, item: job };
}

decodeJob.members = JOB_MEMBERS;
