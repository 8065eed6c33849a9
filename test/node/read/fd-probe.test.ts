import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FdProbe, MAX_ANSWERS, parseStat } from '../../../src/node/read/fd-probe.js';
import { tmpDir } from '../../support/tmp.js';

/** A stat that never answers, as one stuck in a getattr would (the real hang is in test/integration/node-fuse). */
function hangingStat(): string {
  const file = path.join(tmpDir(), 'stat');
  fs.writeFileSync(file, '#!/bin/sh\nexec sleep 600\n', { mode: 0o755 });
  return file;
}

async function ask(probe: FdProbe, key: string, file: string, mount = 'm1'): Promise<unknown> {
  const now = probe.ask(key, file, mount);
  if (now !== undefined) return now;
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

  it('asks at most its share a cycle, and the rest in the cycles after, keeping nothing of them meanwhile', async () => {
    const busy = new FdProbe({ timeoutMs: 30_000, maxPerCycle: 2 });
    const keys = Array.from({ length: 5 }, (_, n) => `1 1 ${n}`);
    expect(keys.map((k) => busy.ask(k, '/dev/null', 'm'))).toEqual(keys.map(() => undefined));
    await busy.settle();
    expect(keys.map((k) => busy.answer(k))).toEqual([{ dev: '1:3' }, { dev: '1:3' }, undefined, undefined, undefined]);
    // The next cycle: those answered are known, two more are asked.
    for (const k of keys) if (busy.answer(k) === undefined) busy.ask(k, '/dev/null', 'm');
    await busy.settle();
    expect(keys.map((k) => busy.answer(k) !== undefined)).toEqual([true, true, true, true, false]);
    expect(Object.fromEntries(busy.take())).toEqual({ device: 4, skipped: 4 });
  });

  it('keeps at most MAX_ANSWERS answers, and asks nothing more while they are kept', async () => {
    const probe = new FdProbe({ timeoutMs: 30_000, maxPerCycle: MAX_ANSWERS + 1 });
    const full = { uncertain: `not asked: ${MAX_ANSWERS} answers kept already` };
    for (let n = 0; n < MAX_ANSWERS; n++) probe.ask(`1 1 ${n}`, '/dev/null', 'm');
    expect(probe.ask('1 1 x', '/dev/null', 'm')).toEqual(full);
    probe.stop(); // each answered without a stat
    await probe.settle();
    expect(probe.answer('1 1 x')).toBeUndefined();
    expect(probe.ask('1 1 x', '/dev/null', 'm')).toEqual(full);
    // Process 1 is gone: its answers with it.
    probe.endScan(new Set());
    expect(probe.ask('1 1 x', '/dev/null', 'm')).toBeUndefined();
  });

  it('forgets the answers of processes that left, and at a full rescan the uncertain ones', async () => {
    const probe = new FdProbe({ timeoutMs: 30_000 });
    await ask(probe, '5 1 3', '/dev/null');
    await ask(probe, '6 1 3', '/nonexistent/uverbs1');
    probe.endScan(new Set([5, 6]));
    expect(probe.answer('6 1 3')).toBeDefined();
    probe.beginFullScan();
    expect(probe.answer('6 1 3')).toBeUndefined();
    expect(probe.answer('5 1 3')).toEqual({ dev: '1:3' });
    probe.endScan(new Set([6]));
    expect(probe.answer('5 1 3')).toBeUndefined();
  });

  it('parses what stat prints, numbers only', () => {
    expect(parseStat('21b6 e7 c0\n')).toEqual([{ dev: '231:192' }, 'device']);
    expect(parseStat('81a4 0 0\n')).toEqual([{ none: true }, 'other']);
    expect(parseStat('61b0 8 1\n')).toEqual([{ none: true }, 'other']); // a block device
    expect(parseStat('character special file\n')[1]).toBe('failed');
  });
});
