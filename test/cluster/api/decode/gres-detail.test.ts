/**
 * `gres_detail` in every API version that has it: the recorded responses (their clusters had no
 * GRES, so every job's member is `[]`) decode to that, and a recorded job element of each version
 * with the member and hostlist set as slurmctld prints them for a GPU job decodes, whole and
 * streamed, to the GPUs Slurm gave it per node. The entry reader on its own: both of Slurm's forms,
 * other GRES, odd and broken entries.
 */
import { describe, expect, it } from 'vitest';
import * as v0038 from '../../../../src/cluster/api/decode/decode-v0038.js';
import * as v004x from '../../../../src/cluster/api/decode/decode-v004x.js';
import {
  MAX_INDICES_PER_ITEM,
  NOT_TEXT,
  parseIndexList,
  parseNodeGres,
  readGresDetail,
} from '../../../../src/cluster/api/decode/gres-detail.js';
import { decodeListStream } from '../../../../src/cluster/api/decode/stream-decode.js';
import type { Decoded, SlurmJob } from '../../../../src/cluster/model.js';
import { readJson } from '../../fixtures.js';

/** Every recorded controller /jobs response, by API version (the release that served it). */
const RECORDED = [
  { version: 'v0.0.38', file: ['recorded', 'slurm-22.05', 'dbd', 'v0.0.38', '01-jobs-jobs.json'], family: v0038 },
  { version: 'v0.0.40', file: ['recorded', 'slurm-24.11', 'v0.0.40', 'jobs.json'], family: v004x },
  { version: 'v0.0.41', file: ['recorded', 'slurm-24.11', 'v0.0.41', 'jobs.json'], family: v004x },
  { version: 'v0.0.42', file: ['recorded', 'slurm-24.11', 'v0.0.42', 'jobs.json'], family: v004x },
  { version: 'v0.0.42', file: ['recorded', 'slurm-26.05', 'v0.0.42', 'jobs.json'], family: v004x },
  { version: 'v0.0.43', file: ['recorded', 'slurm-26.05', 'v0.0.43', 'jobs.json'], family: v004x },
  { version: 'v0.0.44', file: ['recorded', 'slurm-26.05', 'v0.0.44', 'jobs.json'], family: v004x },
  { version: 'v0.0.45', file: ['recorded', 'slurm-26.05', 'v0.0.45', 'jobs.json'], family: v004x },
] as const;

function items(d: Decoded<SlurmJob>): readonly SlurmJob[] {
  if (!d.ok) throw new Error(`decode failed: ${d.message}`);
  expect(d.skipped).toBe(0);
  return d.items;
}

async function* chunks(text: string, size: number): AsyncGenerator<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

/** A two-node GPU job as slurmctld lists it: one entry per node, in hostlist order. */
const GPU_JOB = {
  nodes: 'gpu-[007-008]',
  gres_detail: ['gpu:h100:2(IDX:0-1)', 'gpu:h100:3(IDX:1,4-5)'],
};

describe.each(RECORDED)('$version ($file.1)', ({ file, family }) => {
  const body = readJson(...file) as { jobs: Record<string, unknown>[] };

  it('every recorded job carries the member, read as sent (no GRES on that cluster: empty)', () => {
    const jobs = items(family.decodeJobs(body));
    expect(jobs.length).toBe(body.jobs.length);
    for (const [i, j] of jobs.entries()) expect(j.gres_detail, j.job_id).toEqual(body.jobs[i]?.['gres_detail']);
  });

  it("a recorded element with a GPU job's gres_detail: per node, whole and streamed", async () => {
    const gpuBody = { ...body, jobs: [{ ...body.jobs[0], ...GPU_JOB }] };
    const whole = items(family.decodeJobs(gpuBody))[0] as SlurmJob;
    expect(whole.nodes).toBe('gpu-[007-008]');
    expect(whole.gres_detail).toEqual(GPU_JOB.gres_detail);
    const gpus = (whole.gres_detail ?? []).map((e) => parseNodeGres(e).gpus.map((g) => `${g.type}/${g.index}`));
    expect(gpus).toEqual([
      ['h100/0', 'h100/1'],
      ['h100/1', 'h100/4', 'h100/5'],
    ]);
    const streamed = await decodeListStream(chunks(JSON.stringify(gpuBody), 97), 'jobs', family.decodeJob);
    expect(items(streamed)[0]?.gres_detail).toEqual(GPU_JOB.gres_detail);
  });

  it('a job without the member, or with another type there, decodes with it undefined', () => {
    const { gres_detail: _dropped, ...rest } = body.jobs[0] as Record<string, unknown>;
    const jobs = items(family.decodeJobs({ ...body, jobs: [rest, { ...rest, gres_detail: 'gpu:1(IDX:0)' }] }));
    expect(jobs.map((j) => j.gres_detail)).toEqual([undefined, undefined]);
  });
});

describe('one node entry', () => {
  const read = (e: string) => {
    const r = parseNodeGres(e);
    return { gpus: r.gpus.map((g) => `${g.type}/${g.index}`), unread: r.unread };
  };

  it('typed and untyped, several GRES on one node, ranges and lists', () => {
    expect(read('gpu:h100:2(IDX:0-1)')).toEqual({ gpus: ['h100/0', 'h100/1'], unread: [] });
    expect(read('gpu:4(IDX:0,2-3,7)')).toEqual({ gpus: ['/0', '/2', '/3', '/7'], unread: [] });
    expect(read('gpu:a100:1(IDX:0),gpu:1g.10gb:2(IDX:3-4)')).toEqual({
      gpus: ['a100/0', '1g.10gb/3', '1g.10gb/4'],
      unread: [],
    });
    // A numeric type is a type: the count is the last part before the parenthesis.
    expect(read('gpu:1080:2(IDX:2-3)')).toEqual({ gpus: ['1080/2', '1080/3'], unread: [] });
  });

  it('other GRES and counts without indices are read and give no GPU', () => {
    expect(read('nic:1(IDX:0),gpu:tesla:1(IDX:1)')).toEqual({ gpus: ['tesla/1'], unread: [] });
    expect(read('gpu:h100(CNT:2)')).toEqual({ gpus: [], unread: [] });
    expect(read('shard:2(CNT:2)')).toEqual({ gpus: [], unread: [] });
    expect(read('gpu:0(IDX:N/A)')).toEqual({ gpus: [], unread: [] });
    expect(read('')).toEqual({ gpus: [], unread: [] });
  });

  it('what is in neither form is returned unread; the readable rest of the entry is kept', () => {
    expect(read('gpu:h100:2(IDX:0-1),garbage')).toEqual({ gpus: ['h100/0', 'h100/1'], unread: ['garbage'] });
    expect(read('gpu:h100:x(IDX:0)').unread).toEqual(['gpu:h100:x(IDX:0)']);
    expect(read('gpu:2(IDX:3-1)').unread).toEqual(['gpu:2(IDX:3-1)']);
    expect(read('gpu:2(IDX:0-1').unread).toEqual(['gpu:2(IDX:0-1']);
    expect(read('gpu(CNT:two)').unread).toEqual(['gpu(CNT:two)']);
    expect(read(':1(IDX:0)').unread).toEqual([':1(IDX:0)']);
    expect(read(NOT_TEXT).unread).toEqual([NOT_TEXT]);
  });

  it('an index range too large for one node is refused, not expanded', () => {
    expect(parseIndexList(`0-${MAX_INDICES_PER_ITEM - 1}`)?.length).toBe(MAX_INDICES_PER_ITEM);
    expect(parseIndexList(`0-${MAX_INDICES_PER_ITEM}`)).toBeUndefined();
    expect(read('gpu:1(IDX:0-4294967295)').unread).toEqual(['gpu:1(IDX:0-4294967295)']);
  });

  it('the member: non-arrays are absent, null elements are nodes without GRES, others unreadable', () => {
    expect(readGresDetail(undefined)).toBeUndefined();
    expect(readGresDetail('gpu:1(IDX:0)')).toBeUndefined();
    expect(readGresDetail([])).toEqual([]);
    expect(readGresDetail(['gpu:1(IDX:0)', null, 3])).toEqual(['gpu:1(IDX:0)', '', NOT_TEXT]);
  });
});
