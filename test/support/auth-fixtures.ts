/** What the token-source tests share: a key, a fixed time, a hand-moved clock and checks of what a source hands out. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jwtVerify } from 'jose';
import { expect } from 'vitest';
import type { TokenSource } from '../../src/cluster/api/http/auth.js';
import { AuthError } from '../../src/cluster/http/failure.js';

export const KEY = Buffer.from('0123456789abcdef0123456789abcdef-test-key');
export const T0 = 1_764_000_000;

const dirs: string[] = [];

/** A new temporary directory, removed by removeTmpDirs (call it in afterEach). */
export function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'slurm-otel-auth-'));
  dirs.push(d);
  return d;
}

export function removeTmpDirs(): void {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** A clock the test moves by hand (milliseconds). */
export function clock(startSec = T0): { now: () => number; advance: (sec: number) => void } {
  let ms = startSec * 1000;
  return { now: () => ms, advance: (sec) => (ms += sec * 1000) };
}

export async function tokenOf(src: TokenSource): Promise<string> {
  const h = await src.headers();
  return h['X-SLURM-USER-TOKEN'] as string;
}

export async function verify(token: string, key: Uint8Array = KEY) {
  return (await jwtVerify(token, key, { algorithms: ['HS256'], currentDate: new Date(T0 * 1000) })).payload;
}

export async function authError(p: Promise<unknown>): Promise<AuthError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AuthError);
  return err as AuthError;
}
