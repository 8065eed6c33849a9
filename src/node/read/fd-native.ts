/**
 * The fd scan's native reader (native/fd-reader.c): a process's fd listing, and the links of its
 * fds that are paths, each in one call that makes the system calls `find` makes and answers in one
 * string where Node's fs makes a string of each name and link (and sorts each listing). On the
 * benches' heavy node it lists every fd directory in 0.73 times the time of Node's `readdirSync`
 * and reads every link in 0.63 times `find`'s (docs/benchmarks.md). The answers are the same;
 * only the order of a listing differs (the kernel's, not sorted), so a scan uses one reader
 * throughout.
 *
 * Where it comes from: the single executable carries the compiled module and loads it from an
 * unnamed file (O_TMPFILE in /dev/shm or /tmp: no name another process could open or replace,
 * gone when closed); an
 * npm install loads dist/native/fd-reader.node, if it and the directories above it are the agent's
 * user's or root's and nobody else may write them (loadFile). Where it cannot load (no C compiler at build, a
 * filesystem that forbids execution, another architecture), the scan reads through Node's fs, and
 * the start-up log says why.
 */
import fs from 'node:fs';
import path from 'node:path';
import sea from 'node:sea';
import { fileURLToPath } from 'node:url';

/** Set by the single executable's build (scripts/sea/build.ts): it has no package.json beside it. */
declare const SLURM_OTEL_BUNDLED_VERSION: string | undefined;

/** What native/fd-reader.c answers; both throw as Node's fs throws (an Error with `code`). */
export interface FdReader {
  /** The directory's names joined by '/', in the kernel's order; undefined past `maxNames`. */
  listing(dir: string, maxNames: number): string | undefined;
  /**
   * `[listing, name, link, name, link, …]`: the listing, and the name and link text of each entry
   * whose link is a path; undefined past `maxNames` (or past 4 MiB of such links).
   */
  pathLinks(dir: string, maxNames: number): string[] | undefined;
}

/** The reader, or why the scan reads through Node's fs. */
export type FdReaderLoad = { readonly reader: FdReader } | { readonly reader?: undefined; readonly why: string };

/** The module's interface version (native/fd-reader.c's READER_VERSION). */
const READER_VERSION = 1;
/** The executable's asset name (scripts/sea/build.ts). */
export const FD_READER_ASSET = 'fd-reader.node';
/**
 * Where the executable writes the reader to load it: fixed places, not $TMPDIR, and only on a local
 * filesystem (tmpfs, ext4, xfs, btrfs): a library mapped from FUSE or NFS would be paged in from
 * whoever serves it, and a stalled server would stall the agent at start.
 */
const UNNAMED_DIRS = ['/dev/shm', '/tmp'];
const LOCAL_FILESYSTEMS: ReadonlySet<number> = new Set([0x01021994, 0xef53, 0x58465342, 0x9123683e]);
/** Linux's O_TMPFILE (with O_DIRECTORY, as open(2) takes it): an unnamed file in a directory. */
const O_TMPFILE = 0o20000000 | fs.constants.O_DIRECTORY;

let loaded: FdReaderLoad | undefined;

/** The native reader, loaded once per process. */
export function loadFdReader(): FdReaderLoad {
  loaded ??= tryLoad();
  return loaded;
}

function tryLoad(): FdReaderLoad {
  try {
    const exports = typeof SLURM_OTEL_BUNDLED_VERSION === 'string' ? fromExecutable() : fromPackage();
    return checked(exports);
  } catch (err) {
    return { why: (err as Error).message };
  }
}

/** The exports of the module carried by the single executable, loaded from an unnamed file. */
function fromExecutable(): unknown {
  if (!sea.isSea()) throw new Error('not run as the single executable, which carries the reader');
  const bytes = new Uint8Array(sea.getRawAsset(FD_READER_ASSET));
  const failures: string[] = [];
  for (const dir of UNNAMED_DIRS) {
    try {
      const type = Number(fs.statfsSync(dir).type);
      if (!LOCAL_FILESYSTEMS.has(type)) throw new Error(`a filesystem of type 0x${type.toString(16)}, not a local one`);
      return loadUnnamed(dir, bytes);
    } catch (err) {
      failures.push(`${dir}: ${(err as Error).message}`);
    }
  }
  throw new Error(`could not load it from an unnamed file (${failures.join('; ')})`);
}

/** Writes `bytes` to an unnamed file in `dir` and loads it as a module; the file goes when closed. */
export function loadUnnamed(dir: string, bytes: Uint8Array): unknown {
  const fd = fs.openSync(dir, O_TMPFILE | fs.constants.O_RDWR, 0o500);
  try {
    fs.writeSync(fd, bytes);
    const module = { exports: {} };
    process.dlopen(module, `/proc/self/fd/${fd}`);
    return module.exports;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The exports of dist/native/fd-reader.node: beside the package's compiled code (dist/src/…), or
 * under dist/ where this module runs from its source (the tests).
 */
function fromPackage(): unknown {
  const candidates = ['../../../native/fd-reader.node', '../../../dist/native/fd-reader.node'].map((rel) =>
    fileURLToPath(new URL(rel, import.meta.url)),
  );
  return loadFile(candidates.find((file) => fs.existsSync(file)) ?? (candidates[0] as string));
}

/**
 * Loads `file` as a module where nobody but root or the agent's user could have put it there or
 * could swap it before it is loaded: the file and every directory above it belong to one of them,
 * and none may be written by others (a sticky directory, as /tmp, above the file's own excepted:
 * others cannot rename what is not theirs there).
 */
export function loadFile(file: string): unknown {
  const uid = process.geteuid?.() ?? 0;
  const real = fs.realpathSync(file);
  const dir = path.dirname(real);
  for (let p = real; ; p = path.dirname(p)) {
    const st = fs.statSync(p);
    if (st.uid !== 0 && st.uid !== uid) throw new Error(`${p} is owned by uid ${st.uid}, neither root nor the agent's`);
    const stickyAbove = (st.mode & 0o1000) !== 0 && p !== real && p !== dir;
    if ((st.mode & 0o022) !== 0 && !stickyAbove)
      throw new Error(`${p} may be written by others (mode ${(st.mode & 0o7777).toString(8)})`);
    if (p === path.dirname(p)) break;
  }
  const module = { exports: {} };
  process.dlopen(module, real);
  return module.exports;
}

/** The module's exports as an FdReader, where they are this version's. */
function checked(exports: unknown): FdReaderLoad {
  const e = exports as Partial<FdReader> & { version?: unknown };
  if (e.version !== READER_VERSION || typeof e.listing !== 'function' || typeof e.pathLinks !== 'function')
    throw new Error(`the module is not version ${READER_VERSION} of the reader`);
  return { reader: e as FdReader };
}
