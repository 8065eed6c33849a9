/**
 * Filesystem roots and tolerant readers. Every read answers with a value or a
 * classified failure: a file that vanished (a job or process ended) is normal,
 * a denied read is a gap in knowledge, and neither may pass for "nothing here".
 */
import fs from 'node:fs';
import path from 'node:path';
import { classify, failed, ok, type Failure, type Read } from './result.js';

/**
 * The device number (`major:minor`, as sysfs `dev` files write it) of the character device an fd
 * refers to, given the fd's path (`<procfs>/<pid>/fd/<N>`) and its link text; undefined when the
 * fd refers to anything else or was closed meanwhile. Throws as `fs` does on other failures.
 */
export type FdDeviceOf = (fdPath: string, linkText: string) => string | undefined;

/** Where the node agent looks; injectable so tests and the demo use synthetic trees. */
export interface Roots {
  readonly sysfs: string;
  readonly procfs: string;
  readonly cgroupfs: string;
  /**
   * Where the NVIDIA driver's procfs files are read (`devices`, `driver/nvidia/…`): default
   * `procfs`. Apart so that a test can give real processes a synthetic driver tree.
   */
  readonly nvidiaProcfs?: string;
  /**
   * How an fd's device number is known: by default stat of the fd where its filesystem is local
   * (fd-mounts.ts). A synthetic procfs holds plain symlinks whose targets need not exist, so the
   * demo, run in one process with its tree, gives its own.
   */
  readonly fdDevice?: FdDeviceOf;
}

/** Linux's dev_t split into `major:minor` (glibc's encoding: 12+20 major bits, 8+24 minor bits). */
export function deviceNumber(rdev: number): string {
  const dev = BigInt(rdev);
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn);
  const minor = (dev & 0xffn) | ((dev >> 12n) & ~0xffn);
  return `${major}:${minor}`;
}

/** A device number as sysfs `dev` files write it. */
export const DEV_RE = /^\d{1,10}:\d{1,10}$/;

export const DEFAULT_ROOTS: Roots = { sysfs: '/sys', procfs: '/proc', cgroupfs: '/sys/fs/cgroup' };

function failure(err: unknown, p: string): Failure {
  const e = err as NodeJS.ErrnoException;
  return e.code === undefined
    ? failed(classify(err), `${p}: ${e.message}`)
    : { ...failed(classify(err), `${p}: ${e.code}`), code: e.code };
}

/** Bytes read at most from a sysfs attribute or counter, or a /proc/<pid> file (stat, comm, cmdline). */
export const ATTRIBUTE_LIMIT = 4096;
/** Bytes read at most from a list (cgroup.procs of a job with ~500k processes, mountinfo). */
export const LIST_LIMIT = 4 << 20;

export interface ReadOptions {
  /** More bytes than this is `too_large`; the rest of the file is never read. */
  readonly limit?: number;
  /** Decode as UTF-8 (names, firmware versions); counters and lists stay latin1, which is cheaper. */
  readonly utf8?: boolean;
  /**
   * The file is served whole by one read (a sysfs attribute, a regular file): a read shorter than
   * asked is the end, with no second read to see it. Not for procfs or cgroup lists, whose reads
   * stop at page boundaries.
   */
  readonly whole?: boolean;
  /**
   * A list of short records (cgroup.procs: a PID a line). The kernel fills each read of such a list
   * to within a record of its buffer (a page or more), so a read that comes back less than half a
   * page is the end, with no second read to see it; a regular file ends at any short read.
   */
  readonly shortRecords?: boolean;
}

/** Less than this from one read of a list of short records is its end (ReadOptions.shortRecords). */
const HALF_PAGE = 2048;

// Non-blocking: a FIFO planted in sysfs or a cgroup tree must not hang the cycle in open().
const OPEN_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY;

// One shared buffer serves the common small reads without an allocation each.
const SHARED = Buffer.allocUnsafe(64 * 1024);

/**
 * Reads a small text file (sysfs attribute, /proc/<pid>/stat, cgroup.procs). Only regular
 * files are read (sysfs, procfs and cgroupfs files are): a device such as /dev/zero behind a
 * symlink, or a FIFO, is `malformed`, and no more than `limit` bytes are ever read. The file
 * type is asked (fstat) only when the read looks wrong (nothing, too much, EAGAIN): a cycle reads
 * a few thousand files, and asking each costs the cycle ~5%. `named` is the path errors give,
 * where `p` is relative to the working directory (working-dir.ts).
 */
export function readSmall(p: string, opts: ReadOptions = {}, named: string = p): Read<string> {
  let fd: number;
  try {
    fd = fs.openSync(p, OPEN_FLAGS);
  } catch (err) {
    return failure(err, named);
  }
  const notRegular = (): Read<string> => failed('malformed', `${named}: not a regular file`);
  try {
    const limit = opts.limit ?? ATTRIBUTE_LIMIT;
    let r: { buf: Buffer; length: number } | undefined;
    try {
      r = readBounded(fd, limit, opts.whole === true ? 'whole' : opts.shortRecords === true ? 'records' : 'list');
    } catch (err) {
      // A FIFO with a writer and nothing written answers EAGAIN to a non-blocking read.
      if (!fs.fstatSync(fd).isFile()) return notRegular();
      throw err;
    }
    if ((r === undefined || r.length === 0) && !fs.fstatSync(fd).isFile()) return notRegular();
    if (r === undefined) return failed('too_large', `${named}: more than ${limit} bytes`);
    return ok(r.buf.toString(opts.utf8 ? 'utf8' : 'latin1', 0, r.length));
  } catch (err) {
    return failure(err, named);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Reads a sysfs attribute again through an fd kept open: a read at offset 0 makes sysfs show it
 * anew, so a held counter costs one pread instead of open, read and close. `p` names it in errors.
 */
export function rereadAttribute(fd: number, p: string): Read<string> {
  try {
    const n = fs.readSync(fd, SHARED, 0, ATTRIBUTE_LIMIT + 1, 0);
    if (n > ATTRIBUTE_LIMIT) return failed('too_large', `${p}: more than ${ATTRIBUTE_LIMIT} bytes`);
    return ok(SHARED.toString('latin1', 0, n));
  } catch (err) {
    return failure(err, p);
  }
}

/** Opens a file to be read again and again (rereadAttribute); undefined when it cannot be opened. */
export function openAttribute(p: string): number | undefined {
  try {
    const fd = fs.openSync(p, OPEN_FLAGS);
    if (fs.fstatSync(fd).isFile()) return fd;
    fs.closeSync(fd);
  } catch {
    // read the ordinary way, which reports why
  }
  return undefined;
}

/** A read shorter than asked: the end (`whole`), the end if under half a page (`records`), or not (`list`). */
type ShortRead = 'whole' | 'records' | 'list';

/** Reads until EOF, at most `limit` bytes; undefined when the file holds more. */
function readBounded(fd: number, limit: number, short: ShortRead): { buf: Buffer; length: number } | undefined {
  let buf = SHARED;
  let length = 0;
  for (;;) {
    if (length === buf.length) {
      const bigger = Buffer.allocUnsafe(Math.min(buf.length * 4, limit + 1));
      buf.copy(bigger, 0, 0, length);
      buf = bigger;
    }
    const asked = Math.min(buf.length, limit + 1) - length;
    const n = fs.readSync(fd, buf, length, asked, null);
    if (n === 0) return { buf, length };
    length += n;
    if (length > limit) return undefined;
    if (n < asked && (short === 'whole' || (short === 'records' && n < HALF_PAGE))) return { buf, length };
  }
}

/** An inode as inodeOf tells it; kept as numbers, compared each cycle without making a string. */
export interface InodeId {
  readonly ino: number;
  readonly ctimeMs: number;
}

/** Whether two inodeOf readings name the same instance of a path. */
export function sameInode(a: InodeId, b: InodeId): boolean {
  return a.ino === b.ino && a.ctimeMs === b.ctimeMs;
}

/**
 * What tells one instance of a path from a later one made in its place, on a filesystem that never
 * gives a freed inode number to the next file (freshInodes): the inode number and change time.
 * procfs gives a new process its own /proc/<pid> inode, and keeps it while the process lives (or
 * makes a fresh one when it drops it from its cache: a change that costs a re-read only). `named`
 * as in readSmall.
 */
export function inodeOf(p: string, named: string = p): Read<InodeId> {
  try {
    const st = fs.statSync(p);
    return ok({ ino: st.ino, ctimeMs: st.ctimeMs });
  } catch (err) {
    return failure(err, named);
  }
}

/** A directory's names; `named` as in readSmall. */
export function listDir(p: string, named: string = p): Read<string[]> {
  try {
    return ok(fs.readdirSync(p));
  } catch (err) {
    return failure(err, named);
  }
}

/**
 * A directory's listing as `list` answers it (the fd scan's native reader, fd-native.ts), its
 * failures told as listDir's; `named` as in readSmall.
 */
export function listWith<T>(list: () => T, named: string): Read<T> {
  try {
    return ok(list());
  } catch (err) {
    return failure(err, named);
  }
}

/** What one listing of a directory tells. */
export interface Entries {
  /** The real subdirectories (symlinks excluded: v1 aliases like cpu -> cpu,cpuacct). */
  readonly subdirs: string[];
  /** Every other entry's name (files, symlinks); absent where the directory was not listed (subdirsOf). */
  readonly others?: string[];
}

/** A directory's entries, from one listing; `named` as in readSmall. */
export function listEntries(p: string, named: string = p): Read<Entries> {
  try {
    const subdirs: string[] = [];
    const others: string[] = [];
    for (const d of fs.readdirSync(p, { withFileTypes: true })) (d.isDirectory() ? subdirs : others).push(d.name);
    return ok({ subdirs, others });
  } catch (err) {
    return failure(err, named);
  }
}

/** Names of the real subdirectories (symlinks excluded: v1 aliases like cpu -> cpu,cpuacct). */
export function listSubdirs(p: string): Read<string[]> {
  const r = listEntries(p);
  return r.ok ? ok(r.value.subdirs) : r;
}

/**
 * Filesystems whose directories count their subdirectories in their link count (2 plus one for
 * each): cgroup v1 and v2 (kernfs), tmpfs, ext4, xfs. Elsewhere a link count tells nothing (btrfs
 * and overlay's merged directories say 1; a FUSE view of cgroups may say 2 of every directory).
 */
const COUNTS_SUBDIRS: ReadonlySet<number> = new Set([0x27e0eb, 0x63677270, 0x01021994, 0xef53, 0x58465342]);

/** Whether the directories under `p` count their subdirectories in their link count (above). */
export function linksCountSubdirs(p: string): boolean {
  try {
    return COUNTS_SUBDIRS.has(Number(fs.statfsSync(p).type));
  } catch {
    return false;
  }
}

/**
 * Filesystems that number inodes from a counter and never hand a freed number to the next file:
 * procfs and tmpfs. A disk filesystem (ext4 and the like) gives it to the next file made, and
 * within one tick of its clock the change time is the same too.
 */
const FRESH_INODES: ReadonlySet<number> = new Set([0x9fa0, 0x01021994]);

/** Whether a path under `p`, removed and made again, always has another inode number (above). */
export function freshInodes(p: string): boolean {
  try {
    return FRESH_INODES.has(Number(fs.statfsSync(p).type));
  } catch {
    return false;
  }
}

/**
 * The entries of `p`; with `byLinks` (linksCountSubdirs of its filesystem), no subdirectories and
 * no listing (`others` absent) when its link count is 2. One stat instead of a listing: a leaf
 * cgroup holds dozens of files and is most of a job's tree. A stat that fails lists, which
 * reports why. `named` as in readSmall.
 */
export function subdirsOf(p: string, byLinks: boolean, named: string = p): Read<Entries> {
  if (byLinks) {
    try {
      if (fs.statSync(p).nlink === 2) return ok({ subdirs: [] });
    } catch {
      // listed below
    }
  }
  return listEntries(p, named);
}

export const join = path.join;

/**
 * A directory's entry, by the name the directory's listing gave: the two joined as strings. A
 * listed name holds no `/` and is never `.` or `..`, so nothing is left to normalize, where
 * path.join would make several strings per call: the cgroup walk takes two paths per cgroup each
 * cycle, about 1.7 MiB of garbage a cycle on the benches' heavy node through path.join.
 */
export function entryPath(dir: string, name: string): string {
  return dir.endsWith('/') ? dir + name : `${dir}/${name}`;
}

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
  const info = readSmall(join(procfs, 'self', 'mountinfo'), { limit: LIST_LIMIT });
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
