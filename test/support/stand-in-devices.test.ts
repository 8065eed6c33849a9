/**
 * The stand-in devices the real-cgroup tests hold: never numbers that any process (the
 * child-runner test reads /dev/zero) or another test (FUSE opens /dev/fuse) may open in passing,
 * and, when a device is taken, the error names who holds it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { leaseStandIns, pickStandIns, standInPool, type StandIn } from './stand-in-devices.js';
import { waitFor } from './tools.js';

/** Devices anything may open: stdio redirections, random numbers, FUSE mounts. */
const COMMON = ['1:3', '1:5', '1:8', '1:9', '10:229', '5:0', '5:2'];

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** Another run's real-cgroup test may hold the lease for minutes: wait for it. */
const LEASED_MS = 900_000;

describe('stand-in devices', () => {
  it('come from devices nothing opens in passing, at least the five the real-cgroup tests need', () => {
    const pool = standInPool();
    expect(pool.length).toBeGreaterThanOrEqual(5);
    for (const s of pool) expect(COMMON, s.of).not.toContain(s.dev);
  });

  it(
    'five distinct ones are picked; when too few are free, the error names the process holding one',
    async () => {
      cleanups.push(await leaseStandIns(LEASED_MS));
      const picked = pickStandIns(5);
      expect(new Set(picked.map((s) => s.dev)).size).toBe(5);
      for (const s of picked) expect(COMMON).not.toContain(s.dev);
      const pool = standInPool();
      const first = pool.find((s) => fs.existsSync(s.of)) as StandIn;
      const holder = spawn('/bin/sh', ['-c', `exec 3<'${first.of}'; exec sleep 600`], { stdio: 'ignore' });
      cleanups.push(() => holder.kill('SIGKILL'));
      const message = await waitFor('the device held', () => {
        try {
          pickStandIns(pool.length);
          return undefined;
        } catch (err) {
          return (err as Error).message;
        }
      });
      expect(message).toContain(`${first.of} (${first.dev}) held by PID ${holder.pid} (sleep)`);
    },
    LEASED_MS + 60_000,
  );
});
