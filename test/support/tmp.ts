/** Temporary trees and real permission failures for tests. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, TestRunner } from 'vitest';

/** Made by a test (or its beforeEach): removed after it. */
const made: string[] = [];
/** Made outside any test (a beforeAll): removed after the file's own afterAll hooks. */
const madeForFile: string[] = [];

/**
 * A fresh temporary directory, under `base` when given. Made in a test, it is removed after that
 * test; made in a beforeAll, after the file's tests and their afterAll hooks, so that what the
 * hooks started (an agent reading a tree there, a Prometheus storing there) has stopped first.
 */
export function tmpDir(prefix = 'slurm-otel-test-', base = os.tmpdir()): string {
  const dir = fs.mkdtempSync(path.join(base, prefix));
  fs.chmodSync(dir, 0o755);
  (TestRunner.getCurrentTest() === undefined ? madeForFile : made).push(dir);
  return dir;
}

/**
 * A fresh temporary directory on tmpfs (/dev/shm), removed as tmpDir's are: a synthetic /proc there
 * numbers its inodes as procfs does, never giving a freed number to the next directory.
 */
export function tmpfsDir(): string {
  const dir = tmpDir('slurm-otel-test-', '/dev/shm');
  if (Number(fs.statfsSync(dir).type) !== 0x01021994) throw new Error('/dev/shm is not a tmpfs here');
  return dir;
}

/** A process exits: its /proc/<pid> directory goes away. */
export function removeProcess(procfs: string, pid: number): void {
  fs.rmSync(path.join(procfs, String(pid)), { recursive: true, force: true });
}

afterEach(() => {
  for (const dir of made.splice(0)) removeTree(dir);
});

// Registered at the file's top level (this module is loaded afresh for each test file): it runs
// after every describe block's own afterAll.
afterAll(() => {
  for (const dir of madeForFile.splice(0)) removeTree(dir);
});

/**
 * Removes a tree, also one a test made unreadable (deny): root removes it as it is; any other
 * user first gives itself back the directories' permissions.
 */
function removeTree(dir: string): void {
  try {
    fs.rmSync(dir, { recursive: true, force: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EACCES') throw e;
    allowOwner(dir);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Gives the owner rwx on every directory under `dir` (each is opened only after its own chmod). */
function allowOwner(dir: string): void {
  fs.chmodSync(dir, 0o700);
  for (const d of fs.readdirSync(dir, { withFileTypes: true })) if (d.isDirectory()) allowOwner(path.join(dir, d.name));
}

const NOBODY = 65534;

/**
 * Runs `fn` with an unprivileged effective uid so that mode 000 really denies
 * (root ignores permission bits). Real EACCES from the kernel, no mocks.
 */
export function asUnprivileged<T>(fn: () => T): T {
  const euid = process.geteuid?.();
  if (euid !== 0 || !process.seteuid) return fn();
  process.seteuid(NOBODY);
  try {
    return fn();
  } finally {
    process.seteuid(0);
  }
}

/** As asUnprivileged, for work that runs over several turns of the event loop (a yielding cycle). */
export async function asUnprivilegedAsync<T>(fn: () => Promise<T>): Promise<T> {
  const euid = process.geteuid?.();
  if (euid !== 0 || !process.seteuid) return fn();
  process.seteuid(NOBODY);
  try {
    return await fn();
  } finally {
    process.seteuid(0);
  }
}

/** Makes a file or directory unreadable (for a non-root reader). */
export function deny(p: string): void {
  fs.chmodSync(p, 0o000);
}
