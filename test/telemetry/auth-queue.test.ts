/**
 * The order in which password checks get the worker, with checks the test finishes itself (no
 * bcrypt, no clock): places per source, standings, displacement, clients that left.
 */
import { describe, expect, it } from 'vitest';
import { CheckQueue, type Outcome, type Standing } from '../../src/telemetry/auth-queue.js';
import { sourceOf } from '../../src/telemetry/http-guard.js';

/** A check that runs until the test says, recording the order in which checks started. */
function harness(capacity: number, perSource: number) {
  const q = new CheckQueue<string>(capacity, perSource);
  const started: string[] = [];
  const finish = new Map<string, () => void>();
  const owner = {};
  const submit = (name: string, source: string, standing: Standing, gone?: () => boolean): Promise<Outcome<string>> =>
    q.submit({
      owner,
      source,
      standing,
      gone,
      run: () =>
        new Promise<string>((resolve) => {
          started.push(name);
          finish.set(name, () => resolve(name));
        }),
    });
  const done = async (name: string): Promise<void> => {
    finish.get(name)?.();
    await new Promise((r) => setImmediate(r));
  };
  return { q, started, submit, done, owner };
}

describe('the password check queue', () => {
  it('holds at most perSource places per source, the running one included', async () => {
    const h = harness(32, 2);
    void h.submit('a1', 'A', 'fresh');
    void h.submit('a2', 'A', 'fresh');
    expect(await h.submit('a3', 'A', 'fresh')).toEqual({ ran: false, why: 'address_queue' });
    void h.submit('b1', 'B', 'fresh');
    expect(h.q.size()).toBe(3);
  });

  it('runs the best standing first, the oldest first within one', async () => {
    const h = harness(32, 2);
    void h.submit('first', 'X', 'failed');
    void h.submit('failed', 'A', 'failed');
    void h.submit('fresh1', 'B', 'fresh');
    void h.submit('trusted', 'C', 'trusted');
    void h.submit('fresh2', 'D', 'fresh');
    for (const name of ['first', 'trusted', 'fresh1', 'fresh2']) await h.done(name);
    expect(h.started).toEqual(['first', 'trusted', 'fresh1', 'fresh2', 'failed']);
  });

  it('when full, a newcomer displaces the newest check of a worse standing, or is refused', async () => {
    const h = harness(3, 2);
    void h.submit('running', 'A', 'failed');
    const old = h.submit('old', 'B', 'failed');
    const newest = h.submit('newest', 'C', 'failed');
    expect(await h.submit('failed', 'D', 'failed')).toEqual({ ran: false, why: 'queue_full' });
    void h.submit('fresh', 'E', 'fresh');
    expect(await newest).toEqual({ ran: false, why: 'displaced' });
    const fresh2 = h.submit('fresh2', 'F', 'fresh');
    expect(await old).toEqual({ ran: false, why: 'displaced' });
    // Nothing worse than fresh is waiting now: another fresh one is refused, a trusted one is not.
    expect(await h.submit('fresh3', 'G', 'fresh')).toEqual({ ran: false, why: 'queue_full' });
    void h.submit('trusted', 'H', 'trusted');
    expect(await fresh2).toEqual({ ran: false, why: 'displaced' });
    await h.done('running');
    expect(h.started).toEqual(['running', 'trusted']);
  });

  it('drops unrun a check whose client has gone, and the waiting checks of an owner that closes', async () => {
    const h = harness(32, 2);
    void h.submit('running', 'A', 'fresh');
    let gone = false;
    const left = h.submit('left', 'B', 'fresh', () => gone);
    const waiting = h.submit('waiting', 'C', 'fresh');
    gone = true;
    await h.done('running');
    expect(await left).toEqual({ ran: false, why: 'gone' });
    expect(h.started).toEqual(['running', 'waiting']);
    const later = h.submit('later', 'D', 'fresh');
    h.q.drop(h.owner);
    expect(await later).toEqual({ ran: false, why: 'gone' });
    await h.done('waiting');
    expect(await waiting).toEqual({ ran: true, value: 'waiting' });
  });
});

describe('source addresses', () => {
  it.each([
    ['127.0.0.2', '127.0.0.2'],
    ['::ffff:10.1.2.3', '10.1.2.3'],
    ['2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:DB8:0001:0002::ffff', '2001:db8:1:2::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['64:ff9b::1.2.3.4', '64:ff9b:0:0::/64'],
    [undefined, ''],
  ])('%s is the source %s', (address, source) => {
    expect(sourceOf(address)).toBe(source);
  });
});
