/**
 * Filesystem roots and tolerant readers. Every read answers with a value or a
 * classified failure: a file that vanished (a job or process ended) is normal,
 * a denied read is a gap in knowledge, and neither may pass for "nothing here".
 */
import fs from 'node:fs';
import path from 'node:path';

/** Where the node agent looks; injectable so tests and the demo use synthetic trees. */
export interface Roots {
  readonly sysfs: string;
  readonly procfs: string;
  readonly cgroupfs: string;
}

export const DEFAULT_ROOTS: Roots = { sysfs: '/sys', procfs: '/proc', cgroupfs: '/sys/fs/cgroup' };

/** gone: ENOENT/ESRCH (ended); denied: EACCES/EPERM; malformed: content unparsable; io: anything else. */
export type FailureKind = 'gone' | 'denied' | 'malformed' | 'io';

export type Read<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly kind: FailureKind; readonly detail: string };

export function ok<T>(value: T): Read<T> {
  return { ok: true, value };
}

export function failed(kind: FailureKind, detail: string): { ok: false; kind: FailureKind; detail: string } {
  return { ok: false, kind, detail };
}

export function classify(err: unknown): FailureKind {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT' || code === 'ESRCH' || code === 'ENOTDIR') return 'gone';
  if (code === 'EACCES' || code === 'EPERM') return 'denied';
  return 'io';
}

function failure(err: unknown, p: string): { ok: false; kind: FailureKind; detail: string } {
  const e = err as NodeJS.ErrnoException;
  return failed(classify(err), `${p}: ${e.code ?? e.message}`);
}

// sysfs and procfs files are small; one shared buffer avoids an fstat and an allocation per read.
const SMALL = Buffer.allocUnsafe(64 * 1024);

/** Reads a small text file (sysfs attribute, /proc/<pid>/stat, cgroup.procs). */
export function readSmall(p: string): Read<string> {
  let fd: number;
  try {
    fd = fs.openSync(p, 'r');
  } catch (err) {
    return failure(err, p);
  }
  try {
    let total = 0;
    for (;;) {
      const n = fs.readSync(fd, SMALL, total, SMALL.length - total, null);
      if (n === 0) break;
      total += n;
      if (total === SMALL.length) return readWhole(p);
    }
    return ok(SMALL.toString('latin1', 0, total));
  } catch (err) {
    return failure(err, p);
  } finally {
    fs.closeSync(fd);
  }
}

function readWhole(p: string): Read<string> {
  try {
    return ok(fs.readFileSync(p, 'latin1'));
  } catch (err) {
    return failure(err, p);
  }
}

export function listDir(p: string): Read<string[]> {
  try {
    return ok(fs.readdirSync(p));
  } catch (err) {
    return failure(err, p);
  }
}

/** Names of the real subdirectories (symlinks excluded: v1 aliases like cpu -> cpu,cpuacct). */
export function listSubdirs(p: string): Read<string[]> {
  try {
    const out: string[] = [];
    for (const d of fs.readdirSync(p, { withFileTypes: true })) if (d.isDirectory()) out.push(d.name);
    return ok(out);
  } catch (err) {
    return failure(err, p);
  }
}

export const join = path.join;

/** Parses a decimal counter exactly; anything but digits is malformed. */
export function parseCounter(text: string): Read<bigint> {
  const t = text.trim();
  if (!/^\d{1,20}$/.test(t)) return failed('malformed', JSON.stringify(t.slice(0, 40)));
  const v = BigInt(t);
  if (v > 0xffff_ffff_ffff_ffffn) return failed('malformed', `${t} exceeds 64 bits`);
  return ok(v);
}

/**
 * Whether procfs is mounted with `hidepid` (1, 2, invisible, noaccess): then an
 * unprivileged reader does not see other users' processes at all, and a
 * process outside Slurm holding a device would be invisible.
 */
export function procHidesProcesses(procfs: string): boolean {
  const info = readSmall(join(procfs, 'self', 'mountinfo'));
  if (!info.ok) return false;
  for (const line of info.value.split('\n')) {
    const fields = line.split(' ');
    if (fields[4] !== procfs) continue;
    const superOptions = fields[fields.indexOf('-') + 3] ?? '';
    const m = /(?:^|,)hidepid=([^,]+)/.exec(superOptions);
    if (m && m[1] !== '0' && m[1] !== 'off') return true;
  }
  return false;
}
