/** adjustAccountingJobs: Soperator's adjustments to slurmdbd rows, row by row and on recorded data. */
import { describe, expect, it } from 'vitest';
import * as v0038 from '../../../src/cluster/api/decode/decode-v0038.js';
import type { SlurmJob } from '../../../src/cluster/model.js';
import { adjustAccountingJobs, ZOMBIE_PENDING_AGE_MS } from '../../../src/cluster/adjust-accounting.js';
import { jobMemoryBytes } from '../../../src/cluster/tres.js';
import { recorded } from '../fixtures.js';
import { job, ok, T0 } from './helpers.js';

const acct = (id: string, state: string[], extra: Partial<SlurmJob> = {}): SlurmJob =>
  job(id, state, { source: 'accounting', ...extra });
const nowS = T0 / 1000;
const DAY = 24 * 3600;

describe('adjustAccountingJobs', () => {
  it('projects the end of a running job as start + time limit', () => {
    const [j] = adjustAccountingJobs([acct('1', ['RUNNING'], { start_time: nowS - 100, time_limit: 60 })], T0);
    expect(j?.end_time).toBe(nowS - 100 + 3600);
  });

  it('leaves the end empty without a known limit, and never overrides a real end', () => {
    const out = adjustAccountingJobs(
      [
        acct('1', ['RUNNING'], { start_time: nowS - 100, time_limit_unlimited: true }),
        acct('2', ['RUNNING'], { start_time: nowS - 100 }),
        acct('3', ['COMPLETED'], { start_time: nowS - 100, end_time: nowS - 50, time_limit: 60 }),
        acct('4', ['PENDING'], { submit_time: nowS - 10, time_limit: 60 }),
        acct('5', ['RUNNING'], { time_limit: 60 }),
      ],
      T0,
    );
    expect(out.map((j) => j.end_time)).toEqual([undefined, undefined, nowS - 50, undefined, undefined]);
  });

  it('normalises unallocated node lists to empty', () => {
    const out = adjustAccountingJobs(
      [
        acct('1', ['PENDING'], { nodes: 'None assigned' }),
        acct('2', ['PENDING'], { nodes: ' (null) ' }),
        acct('3', ['RUNNING'], { nodes: 'n[1-2]' }),
      ],
      T0,
    );
    expect(out.map((j) => j.nodes)).toEqual(['', '', 'n[1-2]']);
  });

  it('drops zombie pending rows: never started, never ended, submitted over 30 days ago', () => {
    const old = nowS - ZOMBIE_PENDING_AGE_MS / 1000 - 1;
    const out = adjustAccountingJobs(
      [
        acct('zombie', ['PENDING'], { submit_time: old }),
        acct('young', ['PENDING'], { submit_time: nowS - 29 * DAY }),
        acct('old-but-ran', ['RUNNING'], { submit_time: old, start_time: old + 10 }),
        acct('old-but-ended', ['CANCELLED'], { submit_time: old, end_time: old + 10 }),
        acct('no-submit', ['PENDING']),
      ],
      T0,
    );
    expect(out.map((j) => j.job_id)).toEqual(['young', 'old-but-ran', 'old-but-ended', 'no-submit']);
  });

  it('forgets a zero allocated-node count so memory is not reported as 0 bytes', () => {
    const [j] = adjustAccountingJobs([acct('1', ['PENDING'], { node_count: 0, memory_per_node: 1024 })], T0);
    expect(j?.node_count).toBeUndefined();
    expect(jobMemoryBytes(j as SlurmJob)).toBeUndefined();
  });

  it('passes controller rows through untouched, zombies included', () => {
    const rows = [
      job('1', ['RUNNING'], { start_time: nowS - 10, time_limit: 5 }),
      job('2', ['PENDING'], { submit_time: nowS - 90 * DAY, nodes: 'None assigned' }),
    ];
    const out = adjustAccountingJobs(rows, T0);
    expect(out).toHaveLength(2);
    expect(out[0]).toBe(rows[0]);
    expect(out[1]).toBe(rows[1]);
  });

  it('does not change the input rows', () => {
    const row = acct('1', ['RUNNING'], { start_time: nowS - 100, time_limit: 60, nodes: 'None assigned' });
    const copy = structuredClone(row);
    adjustAccountingJobs([row], T0);
    expect(row).toEqual(copy);
  });

  it('on the recorded slurmdbd (dbv0.0.38) response, which truncated times to the query window, keeps every reported time', () => {
    // Recorded without disable_truncate_usage_time: running rows end, and pending rows start and
    // end, at the window end. A reported time is never overridden, and such rows are no zombies.
    const rows = ok(v0038.decodeAccountingJobs(recorded('v0.0.38', '01-jobs-slurmdb-jobs.json')));
    const now = 1796021500 * 1000;
    for (const at of [now, now + 3650 * DAY * 1000]) {
      const out = adjustAccountingJobs(rows, at);
      expect(out.map((j) => [j.job_id, j.start_time, j.end_time])).toEqual(
        rows.map((j) => [j.job_id, j.start_time, j.end_time]),
      );
    }
    const pending = adjustAccountingJobs(rows, now).filter((j) => j.state[0] === 'PENDING');
    expect(pending.map((j) => [j.job_id, j.nodes])).toEqual([
      ['7', ''],
      ['17', ''],
    ]);
  });
});
