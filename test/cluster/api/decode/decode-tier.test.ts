/**
 * What decides the partition slurmctld counts a multi-partition pending job in, as recorded real
 * responses carry it: each partition's tier (`priority_tier` in v0.0.36–v0.0.38, `priority.tier`
 * from v0.0.40), a job's `last_sched_evaluation` (every version) and `priority_by_partition`
 * (v0.0.42+, `[{partition, priority}]`).
 */
import { describe, expect, it } from 'vitest';
import { decodeJob } from '../../../../src/cluster/api/decode/decode-job.js';
import { decodePartition } from '../../../../src/cluster/api/decode/decode-partitions.js';
import { readJson, recorded } from '../../fixtures.js';

const list = (v: unknown, key: string): unknown[] => (v as Record<string, unknown[]>)[key] ?? [];

describe('partition tiers and job scheduling stamps', () => {
  const cases: [string, unknown, unknown][] = [
    ['22.05 v0.0.36', recorded('v0.0.36', '01-jobs-partitions.json'), recorded('v0.0.36', '01-jobs-jobs.json')],
    ['22.05 v0.0.38', recorded('v0.0.38', '01-jobs-partitions.json'), recorded('v0.0.38', '01-jobs-jobs.json')],
    ...['v0.0.42'].map((v): [string, unknown, unknown] => [
      `24.11 ${v}`,
      readJson('recorded', 'slurm-24.11', v, 'partitions.json'),
      readJson('recorded', 'slurm-24.11', v, 'jobs.json'),
    ]),
    ...['v0.0.42', 'v0.0.43', 'v0.0.44', 'v0.0.45'].map((v): [string, unknown, unknown] => [
      `26.05 ${v}`,
      readJson('recorded', 'slurm-26.05', v, 'partitions.json'),
      readJson('recorded', 'slurm-26.05', v, 'jobs.json'),
    ]),
  ];

  it.each(cases)('%s: every partition has its tier, every job its last evaluation', (_, parts, jobs) => {
    const decoded = list(parts, 'partitions').map((p) => decodePartition(p));
    expect(decoded.length).toBeGreaterThan(0);
    for (const d of decoded) expect(d.ok && d.item.priority_tier).toBe(1);
    const js = list(jobs, 'jobs').map((j) => decodeJob(j));
    expect(js.length).toBeGreaterThan(0);
    for (const d of js) {
      const j = d.ok ? d.item : undefined;
      expect(j?.last_sched_evaluation).toBeGreaterThanOrEqual(j?.submit_time ?? Number.POSITIVE_INFINITY);
    }
  });

  it('reads both tier shapes, the struct first; a missing tier is undefined', () => {
    const tier = (p: Record<string, unknown>) => {
      const d = decodePartition({ name: 'p', ...p });
      return d.ok ? d.item.priority_tier : Number.NaN;
    };
    expect(tier({ priority_tier: 4 })).toBe(4);
    expect(tier({ priority: { job_factor: 1, tier: 7 } })).toBe(7);
    expect(tier({ priority: { tier: 2 }, priority_tier: 9 })).toBe(2);
    expect(tier({})).toBeUndefined();
    expect(tier({ priority: { tier: 'x' } })).toBeUndefined();
  });

  it("reads priority_by_partition as slurmrestd 26.05 sends it (slurmctld's order), dropping malformed entries", () => {
    const job = (priority_by_partition: unknown) => {
      const d = decodeJob({ job_id: 7, job_state: ['PENDING'], partition: 'cpu,hi', priority_by_partition });
      return d.ok ? d.item.priority_by_partition : undefined;
    };
    const seen = [
      { partition: 'hi', priority: 100 },
      { partition: 'cpu', priority: 100 },
    ];
    expect(job(seen)).toEqual(seen);
    // A held job's list is empty (its priority is 0 and none was computed).
    expect(job([])).toBeUndefined();
    expect(job(undefined)).toBeUndefined();
    expect(job([{ partition: 'cpu' }, { priority: 3 }, 4, null, { partition: 'gpu', priority: 5 }])).toEqual([
      { partition: 'gpu', priority: 5 },
    ]);
    expect(job({ partition: 'cpu', priority: 1 })).toBeUndefined();
  });
});
