import { describe, expect, it } from 'vitest';
import { CollectionLoop, type Fetchers, type LoopHooks } from '../../../src/cluster/collect.js';
import type { SlurmDiag, SlurmJob, SlurmNode } from '../../../src/cluster/model.js';
import type { ClusterSnapshot, SubCollector } from '../../../src/cluster/snapshot.js';
import { silentLogger } from '../../support/log.js';

const node = (name: string): SlurmNode => ({ name, state: { base: 'IDLE', flags: [] }, partitions: [] });
const job = (id: string): SlurmJob => ({ source: 'controller', job_id: id, state: ['RUNNING'], nodes: '' });
const diag: SlurmDiag = { server_thread_count: 3, rpcs_by_message_type: [], rpcs_by_user: [] };

function recorder() {
  const log: string[] = [];
  const hooks: LoopHooks = {
    runFinished: (n: SubCollector, _ms: number, err?: unknown) => log.push(`${n}:${err ? 'error' : 'ok'}`),
    skipped: (n) => log.push(`${n}:skipped`),
    stale: (n) => log.push(`${n}:stale`),
    inflight: () => undefined,
  };
  return { log, hooks };
}

function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('CollectionLoop', () => {
  it('isolates sub-collectors: a failing one keeps its last good data, the others update', async () => {
    let jobsFail = false;
    let round = 0;
    const fetchers: Fetchers = {
      nodes: async () => [node(`n${round}`)],
      jobs: async () => {
        if (jobsFail) throw new Error('HTTP 500');
        return [job(`j${round}`)];
      },
      diag: async () => diag,
    };
    const { log, hooks } = recorder();
    const loop = new CollectionLoop({ fetchers, maxInflight: 1, hooks, logger: silentLogger() });
    await loop.tick();
    round = 1;
    jobsFail = true;
    const t = await loop.tick();
    expect(t.failed).toEqual(['jobs']);
    expect(t.snapshot.nodes?.value.map((n) => n.name)).toEqual(['n1']);
    expect(t.snapshot.jobs?.value.map((j) => j.job_id)).toEqual(['j0']);
    expect(t.snapshot.jobs?.seq).toBe(1);
    expect(log.filter((l) => l.startsWith('jobs'))).toEqual(['jobs:ok', 'jobs:error']);
  });

  it('skips a run while the previous one is in flight, and counts it', async () => {
    const slow = deferred<readonly SlurmNode[]>();
    const fetchers: Fetchers = { nodes: () => slow.promise, jobs: async () => [], diag: async () => diag };
    const { log, hooks } = recorder();
    const loop = new CollectionLoop({ fetchers, maxInflight: 1, hooks, logger: silentLogger() });
    const first = loop.tick();
    const second = await loop.tick();
    expect(log).toContain('nodes:skipped');
    expect(second.snapshot.nodes).toBeUndefined();
    slow.resolve([node('a')]);
    expect((await first).snapshot.nodes?.value[0]?.name).toBe('a');
  });

  it('drops a result older than the one stored (overlapping runs)', async () => {
    const calls: ReturnType<typeof deferred<readonly SlurmNode[]>>[] = [];
    const fetchers: Fetchers = {
      nodes: () => {
        const d = deferred<readonly SlurmNode[]>();
        calls.push(d);
        return d.promise;
      },
      jobs: async () => [],
      diag: async () => diag,
    };
    const { log, hooks } = recorder();
    const loop = new CollectionLoop({ fetchers, maxInflight: 2, hooks, logger: silentLogger() });
    const older = loop.tick();
    const newer = loop.tick();
    calls[1]?.resolve([node('new')]);
    await newer;
    calls[0]?.resolve([node('old')]);
    await older;
    expect(log).toContain('nodes:stale');
    expect(loop.snapshot().nodes?.value[0]?.name).toBe('new');
  });

  it('aborts runs in flight on shutdown', async () => {
    const fetchers: Fetchers = {
      nodes: (signal) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))),
      jobs: async () => [],
      diag: async () => diag,
    };
    const { log, hooks } = recorder();
    const loop = new CollectionLoop({ fetchers, maxInflight: 1, hooks, logger: silentLogger() });
    const t = loop.tick();
    loop.abort();
    expect((await t).failed).toEqual(['nodes']);
    expect(log).toContain('nodes:error');
  });
});

describe('CollectionLoop: Soperator stale-sequence cases', () => {
  // Each: the newer run's result, then the older run's; the newer must stay.
  const cases = {
    jobs: { newer: [job('2')], older: [job('1')], read: (s: ClusterSnapshot) => s.jobs?.value.map((j) => j.job_id) },
    nodes: {
      newer: [node('node-2')],
      older: [node('node-1')],
      read: (s: ClusterSnapshot) => s.nodes?.value.map((n) => n.name),
    },
    diag: {
      newer: { ...diag, server_thread_count: 2 },
      older: { ...diag, server_thread_count: 1 },
      read: (s: ClusterSnapshot) => s.diag?.value.server_thread_count,
    },
  };
  it.each(Object.entries(cases))('refresh %s drops a result older than the stored one', async (name, c) => {
    const calls: ReturnType<typeof deferred<unknown>>[] = [];
    const pending = () => {
      const d = deferred<unknown>();
      calls.push(d);
      return d.promise;
    };
    const fetchers = {
      nodes: async () => [node('x')],
      jobs: async () => [job('x')],
      diag: async () => diag,
      [name]: pending,
    } as unknown as Fetchers;
    const { log, hooks } = recorder();
    const loop = new CollectionLoop({ fetchers, maxInflight: 2, hooks, logger: silentLogger() });
    const older = loop.tick();
    const newer = loop.tick();
    calls[1]?.resolve(c.newer);
    await newer;
    calls[0]?.resolve(c.older);
    await older;
    expect(c.read(loop.snapshot())).toEqual(
      c.read({ atMs: 0, [name]: { value: c.newer, atMs: 0, seq: 0 } } as ClusterSnapshot),
    );
    expect(log).toContain(`${name}:stale`);
  });
});
