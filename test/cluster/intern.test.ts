import { describe, expect, it } from 'vitest';
import { staticToken } from '../../src/cluster/api/http/auth.js';
import { SlurmClient } from '../../src/cluster/api/client.js';
import { makeFetchers } from '../../src/cluster/fetchers.js';
import { Interner } from '../../src/cluster/intern.js';
import type { SlurmJob } from '../../src/cluster/model.js';
import { silentLogger } from '../support/log.js';
import { FaultServer } from './api/fault-server.js';

describe('Interner', () => {
  it('makes equal values one copy, in place, leaving other fields and unequal values alone', () => {
    const tres = () => ['cpu', '=', '4'].join('');
    const items = [
      { id: 'a', tres: tres(), state: ['RUNNING'], exit: { status: ['OK'] }, n: 1 },
      { id: 'b', tres: tres(), state: ['RUNNING'], exit: { status: ['OK'] }, n: 2 },
      { id: 'c', tres: 'cpu=8', state: ['PENDING'], exit: undefined, n: 3 },
    ];
    const [a, b, c] = items;
    expect(a?.state).not.toBe(b?.state);
    const interner = new Interner<(typeof items)[number]>({ strings: ['tres', 'id'], values: ['state', 'exit'] });
    for (const i of items) interner.add(i);
    expect(items[0]).toBe(a);
    expect(b?.state).toBe(a?.state);
    expect(b?.exit).toBe(a?.exit);
    expect(c?.state).not.toBe(a?.state);
    expect(items.map((i) => [i.id, i.tres, i.state, i.exit, i.n])).toEqual([
      ['a', 'cpu=4', ['RUNNING'], { status: ['OK'] }, 1],
      ['b', 'cpu=4', ['RUNNING'], { status: ['OK'] }, 2],
      ['c', 'cpu=8', ['PENDING'], undefined, 3],
    ]);
  });
});

describe('Interner keys', () => {
  it('tells apart word arrays that join alike, and word arrays from other values', () => {
    const items = [
      { v: [] as unknown },
      { v: [''] },
      { v: ['a', 'b'] },
      { v: ['a\u0000b'] },
      { v: { 0: 'x' } },
      { v: ['x'] },
    ];
    const interner = new Interner<(typeof items)[number]>({ strings: [], values: ['v'] });
    for (const i of items) interner.add(i);
    expect(items.map((i) => i.v)).toEqual([[], [''], ['a', 'b'], ['a\u0000b'], { 0: 'x' }, ['x']]);
  });
});

describe('fetchers share repeated values of what slurmrestd sends', () => {
  it('each decoded job is seen once by onItem, and equal states are one array', async () => {
    const server = await FaultServer.start({ versions: ['v0.0.44'] });
    const api = new SlurmClient({
      server: server.url,
      tokenSource: staticToken({ token: 't', userName: 'root' }),
      requestTimeoutMs: 10_000,
      logger: silentLogger(),
    });
    try {
      const seen: SlurmJob[] = [];
      const direct = await api.jobs({ onItem: (j) => seen.push(j) });
      expect(direct.ok && direct.data.items).toEqual(seen);
      const jobs = await makeFetchers({
        api,
        jobSource: 'controller',
        accountingLookbackMs: 3_600_000,
        logger: silentLogger(),
      }).jobs(new AbortController().signal);
      const running = jobs.filter((j) => j.state.join() === 'RUNNING');
      expect(running.length).toBeGreaterThan(1);
      for (const j of running) expect(j.state).toBe(running[0]?.state);
    } finally {
      api.close();
      await server.close();
    }
  });
});
