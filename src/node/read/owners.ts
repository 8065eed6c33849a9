/**
 * Which processes hold which uverbs device, for every process on the node.
 *
 * A holder is known by the device its fd refers to, not by the link text: the
 * fd's device number, matched against sysfs `class/infiniband_verbs/uverbsN/dev`.
 * The link text of a chrooted process carries the chroot's prefix, a process in
 * another mount namespace shows the path there, a node may be renamed; and a
 * file merely named `uverbsN` is not the device. Only links that are paths are
 * looked at: `socket:[…]`, `pipe:[…]` and `anon_inode:…` name kernel objects
 * that are never device nodes, and a device node may sit at any path, so no
 * narrower rule on the text is safe. How the device number is learnt without
 * waiting on a job's network filesystem is fd-mounts.ts's part.
 *
 * Cache per process: the fd listing of a process is kept, so a steady process
 * costs a stat of /proc/<pid> (the kernel makes a new process's inode anew, so
 * the same inode is the same process), one readdir and a compare of its names;
 * only fd numbers not seen before are read. Of the fds read, only those on the
 * node's verbs devices and GPUs are kept (an fd table of a million fds on
 * /dev/null costs the agent its listing, a bit to a few bytes an fd, and no
 * more: fd-listing.ts); when those devices change, every table is read again.
 * A table read whole of which one fd's device could not be known (fd-probe.ts)
 * is kept too, its process unreadable until the table changes or the next full
 * rescan. Its stat file (start time, name) is read when it is new or its fd
 * table changed; on a procfs root whose inodes
 * cannot tell (a tree on a disk filesystem), each cycle, and the start time
 * tells. Every link, and every stat, is read again at least every
 * `rescanIntervalMs`. With the native reader (fd-native.ts), a listing is one
 * string compared whole, and a table read whole (up to ONE_CALL_FDS fds) is one
 * call that answers only the links that are paths. Through Node's fs (no
 * reader, or a larger table) links are read from within their fd directory.
 * Each process's inode and stat, and its listing through fs, are named from
 * within procfs (working-dir.ts). A scan
 * is a generator (steps.ts): a full rescan of thousands of processes yields
 * every few milliseconds.
 *
 * The window this leaves: an fd closed and reopened under the same number
 * between two cycles (e.g. a socket replaced by a uverbs device) is not seen
 * until the next full rescan.
 */
import fs from 'node:fs';
import { resolve } from 'node:path';
import { WorkingDir } from './working-dir.js';
import { FdMounts, type FdKind } from './fd-mounts.js';
import { FdProbe, type FdProbeOptions, type ProbeResult } from './fd-probe.js';
import {
  freshInodes,
  inodeOf,
  listDir,
  listWith,
  readSmall,
  sameInode,
  type FdDeviceOf,
  type InodeId,
} from './roots.js';
import type { FdReader } from './fd-native.js';
import { classify, ok, type Failure, type Read } from './result.js';
import type { Problems } from './problems.js';
import { runSteps, Slice, SLICE_MS, type Steps } from '../../steps.js';
import {
  knownFds,
  LISTING_FDS,
  listingOf,
  listingSize,
  MAX_NUMBERS_BYTES,
  numbersBytes,
  sameNames,
  type KnownFds,
  type Listing,
} from './fd-listing.js';

/** A process whose fd table could not be read: it may hold anything. */
export interface UnreadableFds {
  readonly pid: number;
  /** The error code (EACCES, EPERM, EIO …), or `uncertain` (below). */
  readonly errno: string;
  /**
   * Why an fd's device is unknown though the table was read: a path named like a verbs device on
   * a filesystem the agent never asks (fd-mounts.ts).
   */
  readonly uncertain?: string;
  /** The link text of an fd named like a device whose target this host does not have (fd-mounts.ts). */
  readonly missing?: string;
}

/** A process holding a uverbs device, and the paths its fds on it have (the link text). */
export interface Holding {
  readonly pid: number;
  readonly paths: readonly string[];
}

/** Device number (`231:192`) → uverbs device name (`uverbs0`), read from sysfs when first needed. */
export type VerbsByDevice = () => ReadonlyMap<string, string>;

export interface OwnerScan {
  /** uverbs device name (`uverbs3`) → the processes holding an fd on it. */
  readonly holders: ReadonlyMap<string, readonly Holding[]>;
  readonly unreadable: readonly UnreadableFds[];
  /** Every PID listed in /proc this cycle. */
  readonly present: ReadonlySet<number>;
  /**
   * The command name (comm) of each process scanned, as its stat last said: a process renamed in
   * place, its fds unchanged, shows the new name at the next full rescan.
   */
  readonly names: ReadonlyMap<number, string>;
  /** PIDs whose own cgroup tells which HCAs it holds (rdma.current); their fd tables were not read unless asked. */
  readonly covered: readonly number[];
  readonly stats: {
    processes: number;
    fdLinksRead: number;
    fdsStated: number;
    /** fds on a filesystem the agent never asks (network, FUSE): not devices it can see. */
    fdsSkipped: number;
    /** fds named like a device on such a filesystem, asked in a child process (fd-probe.ts), by result. */
    fdProbes: ReadonlyMap<ProbeResult, number>;
    fullRescan: boolean;
  };
}

/**
 * Processes the kernel's rdma cgroup charges already account for: `test` says
 * whether a PID's own cgroup has rdma.current; with `skip`, such a process's
 * fd table is not read at all.
 */
export interface Coverage {
  test(pid: number): boolean;
  readonly skip: boolean;
}

interface ProcEntry {
  /** /proc/<pid>'s inode (inodeOf): while it is the same, so is the process, and its stat is not read. */
  id: InodeId;
  start: string;
  comm: string;
  /** A kernel thread: no fd table. */
  kthread?: true;
  /**
   * The fd names at the last read (fd-listing.ts): the fast path compares against them, and a
   * changed table reads only the fds not among them. One string per process, where an array held a
   * string per fd (600 × 256 of them on a busy node, the largest thing on the agent's heap); a
   * large table's numbers, or their digest.
   */
  listing: Listing;
  /**
   * fd name → the device it refers to, only for fds on a device of `against`. Any other character
   * device is not kept: a user can hold a million fds on /dev/null, and an entry each made the
   * agent's heap grow by ~150 bytes an fd until it ran out.
   */
  chars: Map<string, CharFd>;
  /**
   * The devices map (stable) `chars` was read against: under another one (a device came), the
   * table is read again, since an fd on the new device may be among those not kept.
   */
  against: ReadonlyMap<string, string>;
  /** The uverbs devices among `chars`, as last matched, and against which map: a steady process is matched once. */
  matched?: { readonly verbs: ReadonlyMap<string, string>; readonly held: readonly [string, string[]][] };
  /** Set where the table was read whole yet one fd's device is not known: the process is unreadable. */
  unsure?: Unsure;
}

/** Why a process whose table was read whole is unreadable all the same (UnreadableFds, errno `uncertain`). */
interface Unsure {
  readonly uncertain?: string;
  readonly missing?: string;
}

interface CharFd {
  /** `major:minor` */
  readonly dev: string;
  /** The link text: the path as the process knows it. */
  readonly link: string;
}

/** Whether a link text can name a device node: a path (kernel objects: `socket:[…]`, `pipe:[…]`, `anon_inode:…`). */
function mayBeDevice(link: string): boolean {
  return link.charCodeAt(0) === 47; // '/'
}

/**
 * A process's fd table as far as this cycle read it; `asked`: an fd's device is being asked
 * (fd-probe.ts). `linksRead`: the links read before it failed or waited.
 */
type ProcessRead =
  | { entry: ProcEntry; linksRead: number; stated: number }
  | { errno: string; uncertain?: string; missing?: string; asked?: true; linksRead?: number };

/** What reading a process's new fd links needs. */
interface LinkRead {
  readonly fdDir: string;
  readonly pid: number;
  readonly id: InodeId;
  readonly start: string;
  readonly comm: string;
  readonly names: readonly string[];
  readonly prev?: ProcEntry;
}

/** What a process needs after its stat and fd listing: nothing more, or its new fd links read. */
type ProcessStart =
  'gone' | 'covered' | { errno: string } | { entry: ProcEntry; linksRead: 0; stated: 0 } | { read: LinkRead };

export class FdScanner {
  private cache = new Map<number, ProcEntry>();
  private lastFullMs = -Infinity;
  /** The real procfs's fd → device (fd-mounts.ts); absent when a synthetic tree gives its own. */
  private readonly mounts: FdMounts | undefined;
  /** Asks, off the event loop, what fd-mounts.ts will not ask on it. */
  private readonly probe: FdProbe | undefined;
  private readonly dirs = new WorkingDir();
  /** The procfs root as an absolute path: links are read from within its fd directories. */
  private readonly procfs: string;

  constructor(
    procfs: string,
    private readonly rescanIntervalMs: number,
    private readonly deviceOf?: FdDeviceOf,
    /** How long a piece of a scan runs before it yields (steps.ts). */
    private readonly sliceMs: number = SLICE_MS,
    probe?: FdProbeOptions,
    /** The most bytes of large tables' fd numbers kept (fd-listing.ts). */
    private readonly maxNumbersBytes: number = MAX_NUMBERS_BYTES,
    /** The native reader (fd-native.ts): absent, Node's fs reads every table. */
    private readonly fdReader?: FdReader,
  ) {
    this.procfs = resolve(procfs);
    this.mounts = deviceOf === undefined ? new FdMounts(this.procfs) : undefined;
    this.probe = deviceOf === undefined ? new FdProbe(probe) : undefined;
  }

  /** Kills the probes in flight (a stop). */
  stop(): void {
    this.probe?.stop();
  }

  /**
   * The same map object while sysfs says the same (a few uverbs devices and GPUs): kept entries
   * and matches of steady processes stay valid. When a device comes or goes, every fd table is
   * read again (a full rescan's cost, once): the entries keep only fds on the devices then known.
   */
  private stable(verbs: ReadonlyMap<string, string>): ReadonlyMap<string, string> {
    const key = [...verbs].join(';');
    if (key !== this.verbsKey) [this.verbsKey, this.verbs] = [key, verbs];
    return this.verbs;
  }

  /**
   * What is kept of `pid` between scans, its cost to the agent's memory: the link texts of its fds
   * on devices, and the size of its listing (fd-listing.ts: characters, or bytes of fd numbers).
   */
  kept(pid: number): { readonly links: string[]; readonly listing: number } | undefined {
    const entry = this.cache.get(pid);
    return entry && { links: [...entry.chars.values()].map((c) => c.link), listing: listingSize(entry.listing) };
  }

  private verbsKey = '';
  private verbs: ReadonlyMap<string, string> = new Map();
  /**
   * Bytes of large tables' fd numbers (fd-listing.ts): those the entries of the last scan keep, and
   * what this scan's reads have added to them so far (made, less the last entries they replace). A
   * table read is given what is left of maxNumbersBytes, with what its process's last entry kept:
   * all entries together stay within it.
   */
  private numbersKept = 0;
  private numbersAdded = 0;

  /** One scan, straight through. */
  scan(nowMs: number, problems: Problems, verbs: VerbsByDevice, coverage?: Coverage): OwnerScan {
    return runSteps(this.scanSteps(nowMs, problems, verbs, coverage));
  }

  /** One scan, yielding between pieces of about SLICE_MS. */
  *scanSteps(nowMs: number, problems: Problems, verbs: VerbsByDevice, coverage?: Coverage): Steps<OwnerScan> {
    const full = nowMs - this.lastFullMs >= this.rescanIntervalMs;
    if (full) {
      this.lastFullMs = nowMs;
      this.probe?.beginFullScan();
    }
    this.mounts?.begin();
    this.numbersAdded = 0;
    let numbersKept = 0;
    const listing = listDir(this.procfs);
    if (!listing.ok) {
      problems.add('proc', listing.kind, listing.detail);
      return {
        holders: new Map(),
        unreadable: [],
        present: new Set(),
        names: new Map(),
        covered: [],
        stats: { processes: 0, fdLinksRead: 0, fdsStated: 0, fdsSkipped: 0, fdProbes: new Map(), fullRescan: full },
      };
    }
    const slice = new Slice(this.sliceMs);
    let stableVerbs: ReadonlyMap<string, string> | undefined;
    // Read from sysfs once a scan, when first needed (not at all where every process is covered).
    const devices = (): ReadonlyMap<string, string> => (stableVerbs ??= this.stable(verbs()));
    const at: ScanAt = { full, byInode: freshInodes(this.procfs), devices };
    const next = new Map<number, ProcEntry>();
    const names = new Map<number, string>();
    const holders = new Map<string, Holding[]>();
    const unreadable: UnreadableFds[] = [];
    const present = new Set<number>();
    const covered: number[] = [];
    let linksRead = 0;
    let stated = 0;
    const awaiting: LinkRead[] = [];
    const accept = (pid: number, r: ProcessRead): void => {
      if ('errno' in r) {
        linksRead += r.linksRead ?? 0;
        unreadable.push({
          pid,
          errno: r.errno,
          ...(r.uncertain === undefined ? {} : { uncertain: r.uncertain }),
          ...(r.missing === undefined ? {} : { missing: r.missing }),
        });
        return;
      }
      next.set(pid, r.entry);
      numbersKept += numbersBytes(r.entry.listing);
      linksRead += r.linksRead;
      stated += r.stated;
      const unsure = r.entry.unsure;
      if (unsure !== undefined) {
        unreadable.push({ pid, errno: 'uncertain', ...unsure });
        return;
      }
      names.set(pid, r.entry.comm);
      if (r.entry.chars.size > 0) addHoldings(holders, pid, r.entry, devices());
    };
    try {
      for (const name of listing.value) {
        const c = name.charCodeAt(0);
        if (c < 48 || c > 57) continue;
        if (slice.due()) {
          this.dirs.leave();
          yield;
        }
        const pid = Number(name);
        present.add(pid);
        const started = this.startProcess(pid, at, problems, coverage);
        if (started === 'gone') continue;
        if (started === 'covered' || (coverage !== undefined && !coverage.skip && coverage.test(pid)))
          covered.push(pid);
        if (started === 'covered') continue;
        const r: ProcessRead =
          'read' in started ? yield* this.readLinks(started.read, problems, slice, devices) : started;
        if ('asked' in r && 'read' in started) {
          awaiting.push(started.read);
          linksRead += r.linksRead ?? 0;
        } else accept(pid, r);
      }
      if (this.probe?.hasQuestions === true) {
        // The only wait of a scan, bounded by the probe's deadline: a yielding run awaits it, a
        // straight one reads on and finds those fds still being asked (uncertain).
        this.dirs.leave();
        yield this.probe.settle();
        for (const read of awaiting) {
          accept(read.pid, yield* this.readLinks({ ...read, prev: undefined }, problems, slice, devices));
        }
      }
    } finally {
      // Whichever directory the scan was in (procfs, an fd directory), the agent's own again.
      this.dirs.leave();
    }
    this.probe?.endScan(present);
    this.cache = next;
    this.numbersKept = numbersKept;
    return {
      holders,
      unreadable,
      present,
      names,
      covered,
      stats: {
        processes: present.size,
        fdLinksRead: linksRead,
        fdsStated: this.mounts?.counts.stated ?? stated,
        fdsSkipped: this.mounts?.counts.skipped ?? 0,
        fdProbes: this.probe?.take() ?? new Map(),
        fullRescan: full,
      },
    };
  }

  private startProcess(pid: number, at: ScanAt, problems: Problems, coverage: Coverage | undefined): ProcessStart {
    // Covered first: its stat (start time, for the fd cache) is not needed either.
    if (coverage?.skip && coverage.test(pid)) return 'covered';
    // A steady process costs two paths (its inode, its fd listing), a new one a third (its stat),
    // each named from within procfs (working-dir.ts): `<pid>/fd`, not `/proc/<pid>/fd`.
    const base = `${this.procfs}/${pid}/`;
    const from = this.dirs.enter(this.procfs) ? `${pid}/` : base;
    const id = at.byInode ? inodeOf(from, base) : NO_INODE;
    if (!id.ok) return failedRead(id, problems);
    const cached = at.full ? undefined : readAgainst(this.cache.get(pid), at.devices);
    // Where inodes tell, the same inode is the same process and another inode another (or the same
    // one, its inode dropped from the kernel's cache and made again: read again, a cost and never
    // a mistake). Elsewhere the start time tells.
    const prev = at.byInode && cached !== undefined && !sameInode(cached.id, id.value) ? undefined : cached;
    if (!at.byInode || prev === undefined)
      return this.started({ pid, base, from }, id.value, prev, undefined, problems);
    // A steady process: this stat and its listing.
    if (prev.kthread === true) return { entry: prev, linksRead: 0, stated: 0 };
    const joined = this.joinedUnlessLarge(prev, base);
    if (joined?.ok === true && joined.value === prev.listing) return { entry: prev, linksRead: 0, stated: 0 };
    const fds = this.listFds(from, base, joined);
    if (!fds.ok) return failedRead(fds, problems);
    if (sameNames(prev.listing, fds.value)) return { entry: prev, linksRead: 0, stated: 0 };
    return this.started({ pid, base, from }, id.value, prev, fds.value, problems);
  }

  /**
   * A process's fd names: the native reader's (`joined`, in the kernel's order) where it read them
   * (up to LISTING_FDS), else Node's. One reader for every table it can read, so that a kept
   * listing is compared with one in the same order.
   */
  private listFds(from: string, base: string, joined: Read<string | undefined> | undefined): Read<string[]> {
    if (joined === undefined || (joined.ok && joined.value === undefined)) return listDir(from + 'fd', base + 'fd');
    return joined.ok ? ok(namesOf(joined.value as string)) : joined;
  }

  /**
   * joinedListing, but not for a table kept as fd numbers or a digest (past LISTING_FDS): that one
   * is listed through fs, where the native reader would stop at LISTING_FDS names each cycle for
   * nothing.
   */
  private joinedUnlessLarge(prev: ProcEntry | undefined, base: string): Read<string | undefined> | undefined {
    return prev === undefined || isNamesListing(prev.listing) ? this.joinedListing(base) : undefined;
  }

  /** The native reader's listing of a process's fds (undefined past LISTING_FDS); undefined without the reader. */
  private joinedListing(base: string): Read<string | undefined> | undefined {
    const reader = this.fdReader;
    if (reader === undefined) return undefined;
    const dir = base + 'fd';
    return listWith(() => reader.listing(dir, LISTING_FDS), dir);
  }

  /**
   * A process new, with its fd table changed (after an exec, say), or with no inode to tell: its
   * stat names it and gives its start time; the fd listing when not taken yet.
   */
  private started(
    { pid, base, from }: ProcDir,
    id: InodeId,
    prev: ProcEntry | undefined,
    listed: string[] | undefined,
    problems: Problems,
  ): ProcessStart {
    const stat = readSmall(from + 'stat', STAT_READ, base + 'stat');
    if (!stat.ok) return failedRead(stat, problems);
    const start = startTime(stat.value);
    const comm = commOf(stat.value);
    // A kernel thread has no fd table (and a reader without root may not even list its empty one).
    if (isKernelThread(stat.value))
      return {
        entry: { id, start, comm, listing: '', chars: new Map(), against: NO_DEVICES, kthread: true },
        linksRead: 0,
        stated: 0,
      };
    const fds = listed === undefined ? this.listFds(from, base, this.joinedUnlessLarge(prev, base)) : ok(listed);
    if (!fds.ok) return failedRead(fds, problems);
    const same = prev?.start === start ? prev : undefined;
    if (same && sameNames(same.listing, fds.value)) {
      const entry = same.comm === comm && sameInode(same.id, id) ? same : { ...same, id, comm };
      return { entry, linksRead: 0, stated: 0 };
    }
    return { read: { fdDir: `${base}fd/`, pid, id, start, comm, names: fds.value, ...(same ? { prev: same } : {}) } };
  }

  /**
   * Reads the links of fds not seen before (all of them for a new process or a full rescan), and
   * asks the device of those that are paths, a run of links at a time between checks of the slice.
   * It may return (or throw) within the fd directory: the scan's next process enters procfs from
   * there, and the scan gives the agent's working directory back before it yields or ends.
   */
  private *readLinks(p: LinkRead, problems: Problems, slice: Slice, devices: Devices): Steps<ProcessRead> {
    const known = p.prev && knownFds(p.prev.listing);
    // Read from within the fd directory (working-dir.ts) where there are enough links to pay for the
    // two chdirs: a steady process's new fd or two are read by their whole paths.
    const many = p.names.length - (known?.size ?? 0) >= FROM_WITHIN;
    const own = numbersBytes(this.cache.get(p.pid)?.listing ?? '');
    const room = this.maxNumbersBytes - this.numbersKept - this.numbersAdded + own;
    const r = new LinkReading(p, known, many, devices(), room);
    const answer = known === undefined ? this.pathLinks(p) : undefined;
    if (answer !== undefined) {
      yield* this.notePaths(r, answer, problems, slice);
      return this.settled(r, own);
    }
    let i = this.readRun(r, 0, problems);
    while (i < p.names.length && r.errno === undefined) {
      if (slice.due()) {
        this.dirs.leave();
        yield;
        r.inside = r.tried = false;
      }
      i = this.readRun(r, i, problems);
    }
    return this.settled(r, own);
  }

  /** What a process's reading comes to, its large table's numbers counted against the scan's room. */
  private settled(r: LinkReading, own: number): ProcessRead {
    const read = r.result();
    if ('entry' in read) this.numbersAdded += numbersBytes(read.entry.listing) - own;
    return read;
  }

  /**
   * A whole table's links, read by the native reader in one call where there is one and the table
   * is within ONE_CALL_FDS; undefined, nothing read, otherwise or where the call failed: the links
   * are then read one by one, which says why a table cannot be read.
   */
  private pathLinks(p: LinkRead): string[] | undefined {
    const reader = this.fdReader;
    if (reader === undefined || p.names.length > ONE_CALL_FDS) return undefined;
    try {
      return reader.pathLinks(p.fdDir, ONE_CALL_FDS);
    } catch {
      return undefined;
    }
  }

  /**
   * Notes the native reader's answer: the listing as of its call (which the entry keeps), and each
   * link that is a path, with a turn for the event loop between runs of them (each may cost a stat).
   */
  private *notePaths(r: LinkReading, answer: readonly string[], problems: Problems, slice: Slice): Steps<void> {
    const listing = answer[0] as string;
    r.listing = listing;
    r.linksRead = listing === '' ? 0 : countOf(listing, 47) + 1; // '/'
    for (let i = 1; i + 1 < answer.length; i += 2) {
      if (i > 1 && i % (2 * RUN) === 1 && slice.due()) {
        this.dirs.leave();
        yield;
      }
      const fd = answer[i] as string;
      try {
        this.notePath(r, fd, answer[i + 1] as string);
      } catch (err) {
        if (failedFd(r, fd, err, problems)) return;
      }
    }
  }

  /**
   * Reads links from `from` on, up to RUN of them, and returns where it stopped. This loop is the
   * agent's hottest, kept out of the generator (whose loops V8 compiles less well: an iterator
   * result a name, and more): plain string paths and a one-character test before anything else
   * keep it near a bare readlink scan.
   */
  private readRun(r: LinkReading, from: number, problems: Problems): number {
    const { p, known } = r;
    const names = p.names;
    const stop = r.linksRead + RUN;
    let i = from;
    for (; i < names.length && r.linksRead < stop; i++) {
      const fd = names[i] as string;
      if (known?.has(fd)) {
        const c = p.prev?.chars.get(fd);
        if (c) r.chars.set(fd, c);
        continue;
      }
      if (r.many && !r.tried) {
        r.inside = this.dirs.enter(p.fdDir);
        r.tried = true;
      }
      r.linksRead++;
      try {
        // The whole path is made only where it is needed: most links are kernel objects.
        const link = fs.readlinkSync(r.inside ? fd : p.fdDir + fd);
        if (mayBeDevice(link)) this.notePath(r, fd, link);
      } catch (err) {
        if (failedFd(r, fd, err, problems)) return i;
      }
    }
    return i;
  }

  /** An fd whose link is a path: what its device is, or why that is not known yet. */
  private notePath(r: LinkReading, fd: string, link: string): void {
    const { p } = r;
    r.stated++;
    const path = p.fdDir + fd;
    let kind = this.kindOf(p.pid, fd, path, link);
    // A node whose kernel lists no verbs device: a file named like one can be nothing (not asked).
    if ('ask' in kind && r.against.size === 0) kind = { none: true };
    if ('ask' in kind) {
      // Asked once for all of a process's fds on one file (one path on one mount names one file at a
      // time): a table of a million fds on it costs one stat, not a million answers.
      const answer = this.asked(`${p.pid} ${p.start} ${kind.mount} ${link}`, path, kind);
      if (answer === undefined) r.asked = true;
      else kind = answer;
    }
    if ('dev' in kind) {
      if (r.against.has(kind.dev)) r.chars.set(fd, { dev: kind.dev, link });
    } else if ('uncertain' in kind) r.uncertain ??= `${link}: ${kind.uncertain}`;
    else if ('ask' in kind) r.uncertain ??= `${link} is on ${kind.ask}`;
    else if ('missing' in kind) r.missing ??= link;
  }

  /** The probe's answer for an fd to ask, if it has one; else the question is queued (undefined). */
  private asked(key: string, path: string, kind: { ask: string; mount: string }): FdKind | undefined {
    const known = this.probe?.answer(key);
    if (known !== undefined) return 'uncertain' in known ? { uncertain: `on ${kind.ask}, ${known.uncertain}` } : known;
    if (this.probe === undefined) return { uncertain: `on ${kind.ask}` };
    return this.probe.ask(key, path, kind.mount) ?? this.probe.answer(key);
  }

  private kindOf(pid: number, fd: string, path: string, link: string): FdKind {
    if (this.mounts !== undefined) return this.mounts.kind(pid, fd, link);
    const dev = this.deviceOf?.(path, link);
    return dev === undefined ? { none: true } : { dev };
  }
}

/** The uverbs devices among a process's character-device fds, each with the paths it holds it by. */
function addHoldings(
  holders: Map<string, Holding[]>,
  pid: number,
  entry: ProcEntry,
  verbs: ReadonlyMap<string, string>,
): void {
  if (entry.matched?.verbs !== verbs) entry.matched = { verbs, held: match(entry.chars, verbs) };
  for (const [uverbs, paths] of entry.matched.held) {
    const list = holders.get(uverbs);
    if (list) list.push({ pid, paths });
    else holders.set(uverbs, [{ pid, paths }]);
  }
}

function match(chars: ReadonlyMap<string, CharFd>, verbs: ReadonlyMap<string, string>): [string, string[]][] {
  const mine = new Map<string, string[]>();
  for (const c of chars.values()) {
    const uverbs = verbs.get(c.dev);
    if (uverbs === undefined) continue;
    const paths = mine.get(uverbs);
    if (paths === undefined) mine.set(uverbs, [c.link]);
    else if (!paths.includes(c.link)) paths.push(c.link);
  }
  return [...mine];
}

/**
 * An fd whose link or device could not be read: closed since the listing (false: read on), or the
 * process is unreadable (true: its reading stops, the error noted).
 */
function failedFd(r: LinkReading, fd: string, err: unknown, problems: Problems): boolean {
  const failure = classify(err);
  if (failure === 'gone') return false;
  r.errno = (err as NodeJS.ErrnoException).code ?? 'unknown';
  problems.add('proc', failure, `${r.p.fdDir}${fd}: ${r.errno}`);
  return true;
}

/** Whether a kept listing is the names joined (fd-listing.ts), not fd numbers or a digest ('#…'). */
function isNamesListing(listing: Listing): listing is string {
  return typeof listing === 'string' && listing.charCodeAt(0) !== 35;
}

/** A listing's names (fd-listing.ts joins them with '/', which no name holds). */
function namesOf(listing: string): string[] {
  return listing === '' ? [] : listing.split('/');
}

/** How many times the character `code` occurs in `s`. */
function countOf(s: string, code: number): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) === code) n++;
  return n;
}

/** The fewest links of one fd directory read from within it (WorkingDir): fewer walk less than two chdirs. */
const FROM_WITHIN = 4;

/**
 * The most fds of one table the native reader reads in one call, which cannot yield: some 2 ms of
 * readlinks. A larger table is read a run of links at a time.
 */
export const ONE_CALL_FDS = 2048;

/** Links read between checks of the slice: a check reads the clock. */
const RUN = 64;

/** One process's links as far as they are read. */
class LinkReading {
  readonly chars = new Map<string, CharFd>();
  linksRead = 0;
  stated = 0;
  uncertain: string | undefined = undefined;
  missing: string | undefined = undefined;
  asked = false;
  /** Set where a link could not be read: the process is unreadable. */
  errno: string | undefined = undefined;
  /** The listing the native reader read the links of (fd-native.ts), kept instead of the names'. */
  listing: string | undefined = undefined;
  /** Whether the working directory is the fd directory, and whether entering it was tried. */
  inside = false;
  tried = false;

  constructor(
    readonly p: LinkRead,
    readonly known: KnownFds | undefined,
    readonly many: boolean,
    /** The devices whose fds are kept (ProcEntry.against). */
    readonly against: ReadonlyMap<string, string>,
    /** The bytes left for a large table's numbers in this scan (fd-listing.ts). */
    readonly room: number,
  ) {}

  result(): ProcessRead {
    const linksRead = this.linksRead;
    if (this.errno !== undefined) return { errno: this.errno, linksRead };
    if (this.asked) return { errno: 'uncertain', uncertain: this.uncertain ?? '', asked: true, linksRead };
    // Read whole, yet one fd may be a verbs device whose filesystem did not answer, or (a tree that
    // is not this host's) what an fd is cannot be known here: unreadable, and kept so until its table
    // changes or the next full rescan (when the probe asks again), not read again each cycle.
    const unsure: Unsure | undefined =
      this.uncertain !== undefined
        ? { uncertain: this.uncertain }
        : this.missing !== undefined
          ? { missing: this.missing }
          : undefined;
    const { p } = this;
    return {
      entry: {
        id: p.id,
        start: p.start,
        comm: p.comm,
        listing: this.listing ?? listingOf(p.names, this.room),
        chars: this.chars,
        against: this.against,
        ...(unsure === undefined ? {} : { unsure }),
      },
      linksRead: this.linksRead,
      stated: this.stated,
    };
  }
}

/** A process's directory: as errors and kept paths name it (`base`), and as it is read (`from`). */
interface ProcDir {
  readonly pid: number;
  /** `<procfs>/<pid>/` */
  readonly base: string;
  /** `<pid>/` from within procfs, else `base`. */
  readonly from: string;
}

/** Device number → holder key (`uverbs3`, `gpu:…`): the devices whose fds a scan keeps. */
type Devices = () => ReadonlyMap<string, string>;

/**
 * How this scan reads each process: all of it again (`full`), whether by its inode (freshInodes),
 * and the devices of this scan.
 */
interface ScanAt {
  readonly full: boolean;
  readonly byInode: boolean;
  readonly devices: Devices;
}

const NO_DEVICES: ReadonlyMap<string, string> = new Map();

/** A kept entry, if it was read against this scan's devices (or has no fd table): else it is read again. */
function readAgainst(entry: ProcEntry | undefined, devices: Devices): ProcEntry | undefined {
  return entry === undefined || entry.kthread === true || entry.against === devices() ? entry : undefined;
}

/** A process's inode where inodes tell nothing (freshInodes): always alike; the start time tells. */
const NO_INODE = { ok: true, value: { ino: 0, ctimeMs: 0 } } as const;

/** A process whose stat or fd listing failed: gone (skipped), or unreadable and counted. */
function failedRead(r: Failure, problems: Problems): 'gone' | { errno: string } {
  if (r.kind === 'gone') return 'gone';
  problems.add('proc', r.kind, r.detail);
  return { errno: errnoOf(r.detail) };
}

/** The error code a failed read names at the end of its detail (`<path>: EACCES`). */
function errnoOf(detail: string): string {
  return /: (E[A-Z0-9]+)$/.exec(detail)?.[1] ?? 'unknown';
}

/**
 * /proc/<pid>/stat is one record well under a page (about 52 numbers and a 16-byte name): one read
 * returns it whole, and the read that would see its end is not made (one system call a process).
 */
export const STAT_READ = { whole: true } as const;

/** The kernel's PF_KTHREAD, in field 9 (flags) of /proc/<pid>/stat. */
const PF_KTHREAD = 0x0020_0000;

/** Whether /proc/<pid>/stat is a kernel thread's (field 9, the flags, has PF_KTHREAD). */
export function isKernelThread(stat: string): boolean {
  const flags = Number(statField(stat, 9));
  return Number.isInteger(flags) && (flags & PF_KTHREAD) !== 0;
}

/** Field 22 of /proc/<pid>/stat (after the parenthesised comm, which may contain spaces). */
export function startTime(stat: string): string {
  return statField(stat, 22);
}

/**
 * Field `n` (3 or later, counted from 1 as proc(5) does) of /proc/<pid>/stat: the fields after the
 * comm's last ')' are single-space separated. Found by walking the spaces, not by splitting the
 * record: a cold cycle asks this of every process, and a split makes some fifty strings each time.
 */
function statField(stat: string, n: number): string {
  let at = stat.lastIndexOf(')') + 2;
  for (let field = 3; field < n; field++) {
    const space = stat.indexOf(' ', at);
    if (space < 0) return '';
    at = space + 1;
  }
  const end = stat.indexOf(' ', at);
  return stat.slice(at, end < 0 ? stat.length : end).trimEnd();
}

/**
 * Field 2 of /proc/<pid>/stat, the command name between the first "(" and the last ")": the
 * kernel's comm, as /proc/<pid>/comm gives it. The stat is read as latin1 (it is mostly numbers);
 * a name with bytes beyond ASCII is decoded from its UTF-8 bytes.
 */
export function commOf(stat: string): string {
  const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
  for (let i = 0; i < name.length; i++)
    if (name.charCodeAt(i) > 0x7f) return Buffer.from(name, 'latin1').toString('utf8');
  return name;
}
