import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FdProbe, parseStat } from '../../../src/node/read/fd-probe.js';
import { tmpDir } from '../../support/tmp.js';

/** A stat that never answers, as one stuck in a getattr would (the real hang is in test/integration/node-fuse). */
function hangingStat(): string {
  const file = path.join(tmpDir(), 'stat');
  fs.writeFileSync(file, '#!/bin/sh\nexec sleep 600\n', { mode: 0o755 });
  return file;
}

async function ask(probe: FdProbe, key: string, file: string, mount = 'm1'): Promise<unknown> {
  probe.ask(key, file, mount);
  await probe.settle();
  return probe.answer(key);
}

describe('the fd probe (stat in a child process)', () => {
  it('reads a character device, a plain file and a failure with the real stat, through /proc/<pid>/fd', async () => {
    const dir = tmpDir();
    fs.writeFileSync(path.join(dir, 'uverbs3'), 'not a device');
    const fds = [fs.openSync('/dev/null', 'r'), fs.openSync(path.join(dir, 'uverbs3'), 'r')];
    try {
      const probe = new FdProbe({ timeoutMs: 30_000 });
      expect(await ask(probe, `${process.pid} 1 a`, `/proc/${process.pid}/fd/${fds[0]}`)).toEqual({ dev: '1:3' });
      expect(await ask(probe, `${process.pid} 1 b`, `/proc/${process.pid}/fd/${fds[1]}`)).toEqual({ none: true });
      const missing = await ask(probe, `${process.pid} 1 c`, path.join(dir, 'gone'));
      expect(missing).toMatchObject({ uncertain: expect.stringMatching(/^stat failed: .*No such file/) });
      expect(Object.fromEntries(probe.take())).toEqual({ device: 1, other: 1, failed: 1 });
    } finally {
      for (const fd of fds) fs.closeSync(fd);
    }
  });

  it('abandons a stat that does not answer, and never asks its mount again', async () => {
    const probe = new FdProbe({ statPath: hangingStat(), timeoutMs: 300 });
    expect(await ask(probe, '1 1 3', '/x/uverbs3', 'hung')).toEqual({
      uncertain: expect.stringMatching(/did not answer/),
    });
    expect(await ask(probe, '1 1 4', '/x/uverbs4', 'hung')).toEqual({
      uncertain: 'a stat on its mount hung before',
    });
    expect(Object.fromEntries(probe.take())).toEqual({ timeout: 1, skipped: 1 });
    probe.stop();
  });

  it('asks at most its share a cycle', async () => {
    const busy = new FdProbe({ timeoutMs: 30_000, maxPerCycle: 2 });
    for (const n of [1, 2, 3]) busy.ask(`1 1 ${n}`, '/dev/null', 'm');
    await busy.settle();
    expect(busy.answer('1 1 3')).toEqual({ uncertain: 'not asked yet: too many fds to ask this cycle' });
    expect(busy.answer('1 1 1')).toEqual({ dev: '1:3' });
  });

  it('forgets the answers of processes that left, and at a full rescan the uncertain ones', async () => {
    const probe = new FdProbe({ timeoutMs: 30_000 });
    await ask(probe, '5 1 3', '/dev/null');
    await ask(probe, '6 1 3', '/nonexistent/uverbs1');
    probe.endScan(new Set([5, 6]), false);
    expect(probe.answer('6 1 3')).toBeDefined();
    probe.endScan(new Set([5, 6]), true);
    expect(probe.answer('6 1 3')).toBeUndefined();
    expect(probe.answer('5 1 3')).toEqual({ dev: '1:3' });
    probe.endScan(new Set([6]), false);
    expect(probe.answer('5 1 3')).toBeUndefined();
  });

  it('parses what stat prints', () => {
    expect(parseStat('character special file\ne7:c0\n')).toEqual([{ dev: '231:192' }, 'device']);
    expect(parseStat('regular file\n0:0\n')).toEqual([{ none: true }, 'other']);
    expect(parseStat('character special file\nzz\n')[1]).toBe('failed');
  });
});
