/**
 * The checks a response's items go through before the loop stores them (field names, hostlists,
 * GRES entries) run in pieces: at 100,000 jobs they pass over every job, and scrapes must not wait
 * for all of it. The API here answers from memory, so every turn of the event loop seen while the
 * fetcher runs is one its checks gave.
 */
import { describe, expect, it } from 'vitest';
import type { CallResult } from '../../../src/cluster/api/call-result.js';
import { makeFetchers, type SlurmApi } from '../../../src/cluster/fetchers.js';
import type { SlurmJob } from '../../../src/cluster/model.js';
import type { SubCollector } from '../../../src/cluster/snapshot.js';
import { silentLogger } from '../../support/log.js';
import { turnsDuring } from '../../support/turns.js';

const JOBS = 1_000;

function answer(items: readonly Partial<SlurmJob>[]): CallResult<SlurmJob> {
  return {
    ok: true,
    version: 'v0.0.44',
    data: {
      ok: true,
      items: items as SlurmJob[],
      skipped: 0,
      skip_reasons: [],
      meta: {},
      errors: [],
      warnings: [],
    },
    timing: { startedAtMs: 0, durationMs: 0, attempts: 1, bytes: 0 },
  } as CallResult<SlurmJob>;
}

describe("a response's checks", () => {
  const jobs = Array.from({ length: JOBS }, (_, i) => ({
    job_id: String(i),
    state: ['RUNNING'],
    // One job in a hundred has a hostlist that cannot be expanded, one in fifty a GRES entry Slurm never prints.
    nodes: i % 100 === 0 ? 'gpu-[003' : 'gpu-[001-002]',
    gres_detail: i % 50 === 0 ? ['gpu:h100:2(IDX:0-1)', 'gpu:h100:x(IDX:zz)'] : ['gpu:h100:2(IDX:0-1)'],
  }));

  const fetch = (sliceMs: number | undefined) => {
    const counts: Partial<Record<'hostlists' | 'gres', number>> = {};
    const add = (k: 'hostlists' | 'gres') => (_c: SubCollector, n: number) => (counts[k] = (counts[k] ?? 0) + n);
    const api = { jobs: () => Promise.resolve(answer(jobs)) } as unknown as SlurmApi;
    const fetchers = makeFetchers({
      api,
      jobSource: 'controller',
      accountingLookbackMs: 3_600_000,
      optional: [],
      logger: silentLogger(),
      onBadHostlists: add('hostlists'),
      onBadGresDetail: add('gres'),
      ...(sliceMs === undefined ? {} : { sliceMs }),
    });
    return { counts, jobs: (signal = new AbortController().signal) => fetchers.jobs(signal) };
  };

  it('give the event loop a turn at each pause, and count what a run without pauses counts', async () => {
    const pieces = fetch(0);
    const got = await turnsDuring(() => pieces.jobs());
    // Three passes (field names, hostlists, GRES entries), the slice asked every 256 jobs.
    expect(got.turns).toBeGreaterThanOrEqual(3 * Math.floor(JOBS / 256));
    expect(got.value).toHaveLength(JOBS);
    expect(pieces.counts).toEqual({ hostlists: JOBS / 100, gres: JOBS / 50 });

    const whole = fetch(undefined);
    await whole.jobs();
    expect(whole.counts).toEqual(pieces.counts);
  });

  it('end with the stop: an aborted signal rejects instead of storing the items', async () => {
    const stop = new AbortController();
    const run = fetch(0).jobs(stop.signal);
    stop.abort();
    await expect(run).rejects.toMatchObject({ name: 'AbortError' });
  });
});
