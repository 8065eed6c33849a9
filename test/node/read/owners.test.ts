import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  commOf,
  FdScanner,
  isKernelThread,
  ONE_CALL_FDS,
  startTime,
  type OwnerScan,
} from '../../../src/node/read/owners.js';
import type { FdReader } from '../../../src/node/read/fd-native.js';
import type { FdProbeOptions } from '../../../src/node/read/fd-probe.js';
import { LISTING_FDS } from '../../../src/node/read/fd-listing.js';
import { Problems } from '../../../src/node/read/problems.js';
import { deviceNumber, type FdDeviceOf } from '../../../src/node/read/roots.js';
import { runStepsYielding, type Steps } from '../../../src/steps.js';
import { standardFdDevice, uverbsDevice, writeProcess } from '../../../src/demo/nodetree.js';
import { renameProcess } from '../../support/node-tree.js';
import { asUnprivileged, deny, removeProcess, tmpDir, tmpfsDir } from '../../support/tmp.js';
import { FD_READERS, nativeReader, nativeReaderTested } from '../../support/fd-reader.js';

/** The reader the scanners of the running block read with (FD_READERS); none: Node's fs. */
let reader: FdReader | undefined;

/** FdScanner as the block under test reads: each test runs with each reader. */
class Scanner extends FdScanner {
  constructor(
    procfs: string,
    rescanIntervalMs: number,
    deviceOf?: FdDeviceOf,
    sliceMs?: number,
    probe?: FdProbeOptions,
    maxNumbersBytes?: number,
  ) {
    super(procfs, rescanIntervalMs, deviceOf, sliceMs, probe, maxNumbersBytes, reader);
  }
}

/** sysfs's class/infiniband_verbs for uverbs0..uverbs9 at the kernel's numbers. */
const VERBS = (): Map<string, string> =>
  new Map(Array.from({ length: 10 }, (_, n) => [uverbsDevice(n), `uverbs${n}`] as const));

/** The PIDs of each device's holdings. */
function pidsOf(holders: ReadonlyMap<string, readonly { pid: number }[]>): Record<string, number[]> {
  return Object.fromEntries([...holders].map(([dev, hs]) => [dev, hs.map((h) => h.pid)]));
}

/** A synthetic /proc on a disk filesystem, or on tmpfs (inodes numbered as procfs numbers them). */
function procfs(on: 'disk' | 'tmpfs' = 'disk'): string {
  const dir = path.join(on === 'disk' ? tmpDir() : tmpfsDir(), 'proc');
  fs.mkdirSync(dir);
  return dir;
}

/** Runs a scan's steps, the working directory `home` at every pause and at the end; its pauses and result. */
function pausing(steps: Steps<OwnerScan>, home: string): { pauses: number; scan: OwnerScan } {
  let pauses = 0;
  let r = steps.next();
  for (; r.done !== true; r = steps.next()) {
    expect(process.cwd()).toBe(home);
    pauses++;
  }
  expect(process.cwd()).toBe(home);
  return { pauses, scan: r.value };
}

describe.each(FD_READERS)('FdScanner, reading with %s', (_name, readerOf) => {
  beforeAll(() => {
    reader = readerOf();
  });
  afterAll(() => {
    reader = undefined;
  });

  it('maps every process holding a uverbs fd, job or not', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 10, comm: 'a', uverbs: [0, 3], fds: 10 });
    writeProcess(proc, { pid: 11, comm: 'b', uverbs: [3] });
    writeProcess(proc, { pid: 12, comm: 'c', fds: 50 });
    fs.mkdirSync(path.join(proc, 'self'));
    const scan = new Scanner(proc, 60_000, standardFdDevice).scan(0, new Problems(), VERBS);
    expect(pidsOf(scan.holders)).toEqual({ uverbs0: [10], uverbs3: [10, 11] });
    expect([...scan.present].sort()).toEqual([10, 11, 12]);
    expect(scan.unreadable).toEqual([]);
  });

  it('reads a steady process once, then only fd numbers not seen before', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 20, comm: 'a', fds: 100 });
    const scanner = new Scanner(proc, 60_000, standardFdDevice);
    expect(scanner.scan(0, new Problems(), VERBS).stats.fdLinksRead).toBe(100);
    expect(scanner.scan(1000, new Problems(), VERBS).stats.fdLinksRead).toBe(0);
    fs.symlinkSync('/dev/infiniband/uverbs7', path.join(proc, '20', 'fd', '100'));
    const third = scanner.scan(2000, new Problems(), VERBS);
    expect(third.stats.fdLinksRead).toBe(1);
    expect(pidsOf(third.holders).uverbs7).toEqual([20]);
  });

  it('sees an fd closed and another opened between two cycles: as many fds, other numbers', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 23, comm: 'a', fds: 6 });
    const scanner = new Scanner(proc, 60_000, standardFdDevice);
    const fdDir = path.join(proc, '23', 'fd');
    const before = fs.readdirSync(fdDir);
    scanner.scan(0, new Problems(), VERBS);
    fs.unlinkSync(path.join(fdDir, before[0] as string));
    fs.symlinkSync('/dev/infiniband/uverbs2', path.join(fdDir, '99'));
    expect(fs.readdirSync(fdDir)).toHaveLength(before.length);
    const next = scanner.scan(1000, new Problems(), VERBS);
    expect(next.stats.fdLinksRead).toBe(1);
    expect(pidsOf(next.holders)).toEqual({ uverbs2: [23] });
  });

  it.each(['disk', 'tmpfs'] as const)(
    'tells a listing from one whose fd numbers run on or stop short of the kept ones (a /proc on %s)',
    (on) => {
      const proc = procfs(on);
      writeProcess(proc, { pid: 26, comm: 'a', fds: 3 });
      const fdDir = path.join(proc, '26', 'fd');
      const scanner = new Scanner(proc, 60_000, standardFdDevice);
      const cycle = (atMs: number): { read: number; holders: Record<string, number[]> } => {
        const scan = scanner.scan(atMs, new Problems(), VERBS);
        return { read: scan.stats.fdLinksRead, holders: pidsOf(scan.holders) };
      };
      expect(cycle(0)).toEqual({ read: 3, holders: {} });
      // fd 2 closed, fd 23 opened: "0/1/2" then "0/1/23".
      fs.unlinkSync(path.join(fdDir, '2'));
      fs.symlinkSync('/dev/infiniband/uverbs4', path.join(fdDir, '23'));
      expect(cycle(1000)).toEqual({ read: 1, holders: { uverbs4: [26] } });
      // fd 23 closed, fds 2 and 3 opened: "0/1/23" then "0/1/2/3".
      fs.unlinkSync(path.join(fdDir, '23'));
      fs.symlinkSync('/dev/null', path.join(fdDir, '2'));
      fs.symlinkSync('/dev/infiniband/uverbs6', path.join(fdDir, '3'));
      expect(cycle(2000)).toEqual({ read: 2, holders: { uverbs6: [26] } });
      // fd 3 closed: "0/1/2", the kept listing's beginning.
      fs.unlinkSync(path.join(fdDir, '3'));
      expect(cycle(3000)).toEqual({ read: 0, holders: {} });
      expect(cycle(4000)).toEqual({ read: 0, holders: {} });
    },
  );

  it('forgets a closed uverbs fd at the next listing', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 21, comm: 'a', uverbs: [1] });
    const scanner = new Scanner(proc, 60_000, standardFdDevice);
    expect(pidsOf(scanner.scan(0, new Problems(), VERBS).holders).uverbs1).toEqual([21]);
    fs.unlinkSync(path.join(proc, '21', 'fd', '3'));
    expect(scanner.scan(1000, new Problems(), VERBS).holders.size).toBe(0);
  });

  it('re-reads every link after the rescan interval (catching an fd number reused in between)', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 22, comm: 'a', fds: 8 });
    const scanner = new Scanner(proc, 60_000, standardFdDevice);
    scanner.scan(0, new Problems(), VERBS);
    // Same fd number, new target: invisible to the listing compare.
    fs.unlinkSync(path.join(proc, '22', 'fd', '5'));
    fs.symlinkSync('/dev/infiniband/uverbs2', path.join(proc, '22', 'fd', '5'));
    expect(scanner.scan(30_000, new Problems(), VERBS).holders.size).toBe(0);
    const full = scanner.scan(60_000, new Problems(), VERBS);
    expect(full.stats.fullRescan).toBe(true);
    expect(full.stats.fdLinksRead).toBe(8);
    expect(pidsOf(full.holders).uverbs2).toEqual([22]);
  });

  it('reads a reused PID (new start time) in full', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 23, comm: 'old', fds: 6, startTime: 100 });
    const scanner = new Scanner(proc, 60_000, standardFdDevice);
    scanner.scan(0, new Problems(), VERBS);
    removeProcess(proc, 23);
    writeProcess(proc, { pid: 23, comm: 'new', fds: 4, uverbs: [5], startTime: 200 });
    const scan = scanner.scan(1000, new Problems(), VERBS);
    expect(scan.stats.fdLinksRead).toBe(4);
    expect(pidsOf(scan.holders).uverbs5).toEqual([23]);
  });

  it('on a procfs whose inodes tell (tmpfs here), reads a steady process by its inode: a rename in place shows when its fds change or at the full rescan', () => {
    const proc = procfs('tmpfs');
    writeProcess(proc, { pid: 23, comm: 'old', fds: 2, startTime: 100 });
    const scanner = new Scanner(proc, 60_000, standardFdDevice);
    expect(scanner.scan(0, new Problems(), VERBS).names.get(23)).toBe('old');
    renameProcess(proc, 23, 'renamed');
    expect(scanner.scan(1000, new Problems(), VERBS).names.get(23)).toBe('old');
    fs.symlinkSync('/dev/null', path.join(proc, '23', 'fd', '9'));
    const changed = scanner.scan(2000, new Problems(), VERBS);
    expect(changed.stats.fdLinksRead).toBe(1);
    expect(changed.names.get(23)).toBe('renamed');
    renameProcess(proc, 23, 'again');
    const full = scanner.scan(60_000, new Problems(), VERBS);
    expect(full.stats.fullRescan).toBe(true);
    expect(full.names.get(23)).toBe('again');
  });

  it('on such a procfs, a /proc/<pid> made anew is another process: read again, stat and links', () => {
    const proc = procfs('tmpfs');
    writeProcess(proc, { pid: 24, comm: 'first', uverbs: [1], startTime: 100 });
    const scanner = new Scanner(proc, 60_000, standardFdDevice);
    expect(pidsOf(scanner.scan(0, new Problems(), VERBS).holders)).toEqual({ uverbs1: [24] });
    // The same name, fds and start time (a PID handed out again within one clock tick), fd 3 now
    // a socket: only the directory, made anew as the kernel makes a new process's, tells them apart.
    removeProcess(proc, 24);
    writeProcess(proc, { pid: 24, comm: 'first', fds: 4, startTime: 100 });
    const scan = scanner.scan(1000, new Problems(), VERBS);
    expect(scan.holders.size).toBe(0);
    expect(scan.stats.fdLinksRead).toBe(4);
  });

  it('reads links from within each fd directory, and is back in its own working directory whenever it yields or ends', () => {
    const proc = procfs();
    // The native reader reads a table within ONE_CALL_FDS in one call: past it, a run at a time.
    const fds = reader === undefined ? 300 : ONE_CALL_FDS + 300;
    for (let pid = 40; pid < 46; pid++) writeProcess(proc, { pid, comm: 'a', fds, uverbs: [pid - 40] });
    const home = process.cwd();
    // A scan that yields at every chance (a slice of 0 ms), from a procfs root named relatively.
    const scanner = new Scanner(path.relative(home, proc), 60_000, standardFdDevice, 0);
    const { pauses, scan } = pausing(scanner.scanSteps(0, new Problems(), VERBS), home);
    expect(pauses).toBeGreaterThan(6);
    expect(scan.stats.fdLinksRead).toBe(6 * fds);
    expect(pidsOf(scan.holders)).toEqual(Object.fromEntries([0, 1, 2, 3, 4, 5].map((n) => [`uverbs${n}`, [40 + n]])));
  });

  it('reports a process whose fd table cannot be read as unreadable, never as holding nothing', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 30, comm: 'secret', uverbs: [0] });
    writeProcess(proc, { pid: 31, comm: 'open', uverbs: [1] });
    deny(path.join(proc, '30', 'fd'));
    const problems = new Problems();
    const scan = asUnprivileged(() => new Scanner(proc, 60_000, standardFdDevice).scan(0, problems, VERBS));
    expect(scan.unreadable).toEqual([{ pid: 30, errno: 'EACCES' }]);
    expect(pidsOf(scan.holders).uverbs1).toEqual([31]);
    expect(problems.list()).toEqual([expect.objectContaining({ source: 'proc', kind: 'denied', count: 1 })]);
  });

  it('names /proc/<pid> paths whole in what it reports, steady or new, and pauses in its own working directory', () => {
    const proc = procfs('tmpfs');
    writeProcess(proc, { pid: 30, comm: 'steady', uverbs: [0] });
    writeProcess(proc, { pid: 31, comm: 'new', uverbs: [1] });
    const home = process.cwd();
    // A slice of 0 ms: the scan pauses before every process.
    const scanner = new Scanner(proc, 3_600_000, standardFdDevice, 0);
    asUnprivileged(() => pausing(scanner.scanSteps(0, new Problems(), VERBS), home));
    deny(path.join(proc, '30', 'fd')); // a steady process's listing fails
    removeProcess(proc, 31);
    writeProcess(proc, { pid: 31, comm: 'new', uverbs: [1] });
    deny(path.join(proc, '31', 'stat')); // a new process's stat fails
    const examples = (at: number): string[] => {
      const problems = new Problems();
      const { scan } = asUnprivileged(() => pausing(scanner.scanSteps(at, problems, VERBS), home));
      return [...scan.unreadable.map((u) => `${u.pid} ${u.errno}`), ...problems.list().map((p) => p.example)];
    };
    expect(examples(1000)).toEqual(['30 EACCES', '31 EACCES', `${proc}/30/fd: EACCES`]);
    fs.chmodSync(path.join(proc, '30', 'fd'), 0o755);
    expect(examples(2000)).toEqual(['31 EACCES', `${proc}/31/stat: EACCES`]);
  });

  it.each(['disk', 'tmpfs'] as const)(
    'never counts a kernel thread as unreadable: it has no fd table (a /proc on %s)',
    (on) => {
      const proc = procfs(on);
      writeProcess(proc, { pid: 32, comm: 'kworker/0:1' });
      writeProcess(proc, { pid: 33, comm: 'user-daemon' });
      for (const pid of [32, 33]) deny(path.join(proc, String(pid), 'fd'));
      // Field 9 (flags) of the kernel thread's stat: PF_KTHREAD | PF_WQ_WORKER, as the kernel writes it.
      const stat = path.join(proc, '32', 'stat');
      const fields = fs.readFileSync(stat, 'utf8').split(' ');
      fields[8] = String(0x04208060);
      fs.writeFileSync(stat, fields.join(' '));
      const scanner = new Scanner(proc, 60_000, standardFdDevice);
      for (const atMs of [0, 1000]) {
        const scan = asUnprivileged(() => scanner.scan(atMs, new Problems(), VERBS));
        expect(scan.unreadable).toEqual([{ pid: 33, errno: 'EACCES' }]);
      }
    },
  );

  it('on the real /proc, read without root, no kernel thread is among the unreadable', () => {
    const kthreads = fs.readdirSync('/proc').filter((p) => {
      if (!/^\d+$/.test(p)) return false;
      try {
        return isKernelThread(fs.readFileSync(`/proc/${p}/stat`, 'latin1'));
      } catch {
        return false;
      }
    });
    expect(kthreads.length).toBeGreaterThan(0);
    const scan = asUnprivileged(() => new Scanner('/proc', 60_000).scan(0, new Problems(), VERBS));
    const unreadable = new Set(scan.unreadable.map((u) => String(u.pid)));
    expect(kthreads.filter((p) => unreadable.has(p))).toEqual([]);
    expect(kthreads.filter((p) => scan.present.has(Number(p))).length).toBeGreaterThan(0);
  });

  it('knows a chrooted holder by the device number its fd refers to, and shows the path it holds it by', () => {
    const proc = procfs();
    const chroot = '/var/tmp/sid';
    writeProcess(proc, { pid: 50, comm: 'job', links: [{ target: `${chroot}/dev/infiniband/uverbs0` }] });
    writeProcess(proc, { pid: 51, comm: 'renamed', links: [{ target: '/run/hca/verbs-a' }] });
    // As stat of the fd answers: the chroot's device node and a renamed one are uverbs0 and uverbs1.
    const devices = new Map([
      [`${chroot}/dev/infiniband/uverbs0`, uverbsDevice(0)],
      ['/run/hca/verbs-a', uverbsDevice(1)],
    ]);
    const scan = new Scanner(proc, 60_000, (_p, link) => devices.get(link) ?? standardFdDevice(_p, link)).scan(
      0,
      new Problems(),
      VERBS,
    );
    expect(Object.fromEntries(scan.holders)).toEqual({
      uverbs0: [{ pid: 50, paths: [`${chroot}/dev/infiniband/uverbs0`] }],
      uverbs1: [{ pid: 51, paths: ['/run/hca/verbs-a'] }],
    });
  });

  it('finds no holder in a file merely named uverbsN: a regular file, or another device', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 60, comm: 'file', links: [{ target: '/home/u/uverbs0' }] });
    writeProcess(proc, { pid: 61, comm: 'full', links: [{ target: '/tmp/x/dev/infiniband/uverbs1', dev: '1:7' }] });
    // A file at the very path of a uverbs device, in another mount namespace.
    writeProcess(proc, { pid: 62, comm: 'ns', uverbs: [2] });
    const devices = new Map([
      ['/tmp/x/dev/infiniband/uverbs1', '1:7'],
      ['/dev/infiniband/uverbs2', undefined],
    ]);
    const deviceOf = (p: string, link: string): string | undefined =>
      devices.has(link) ? devices.get(link) : standardFdDevice(p, link);
    const scan = new Scanner(proc, 60_000, deviceOf).scan(0, new Problems(), VERBS);
    expect(scan.holders.size).toBe(0);
    // Links that are paths were asked; sockets were not.
    expect(scan.stats.fdsStated).toBe(3 * 4);
  });

  it('stats only links that are paths, once per fd while the listing stays', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 70, comm: 'a', uverbs: [0], fds: 40 });
    const asked: string[] = [];
    const scanner = new Scanner(proc, 60_000, (p, link) => {
      asked.push(link);
      return standardFdDevice(p, link);
    });
    expect(pidsOf(scanner.scan(0, new Problems(), VERBS).holders)).toEqual({ uverbs0: [70] });
    expect(asked.sort()).toEqual(['/dev/infiniband/uverbs0', '/dev/null', '/dev/null', '/dev/null']);
    expect(pidsOf(scanner.scan(1000, new Problems(), VERBS).holders)).toEqual({ uverbs0: [70] });
    expect(asked).toHaveLength(4);
  });

  it('reads a steady process again when sysfs gains or loses a uverbs device, and not while it stays', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 80, comm: 'a', uverbs: [0], fds: 10 });
    const scanner = new Scanner(proc, 60_000, standardFdDevice);
    const none = (): Map<string, string> => new Map();
    expect(scanner.scan(0, new Problems(), none).holders.size).toBe(0);
    // The fd on uverbs0 was not kept while no such device was known: its table is read again.
    const later = scanner.scan(1000, new Problems(), VERBS);
    expect(later.stats.fdLinksRead).toBe(10);
    expect(pidsOf(later.holders)).toEqual({ uverbs0: [80] });
    const steady = scanner.scan(2000, new Problems(), VERBS);
    expect(steady.stats.fdLinksRead).toBe(0);
    expect(pidsOf(steady.holders)).toEqual({ uverbs0: [80] });
    expect(scanner.scan(3000, new Problems(), none).holders.size).toBe(0);
  });

  it('keeps nothing of fds on devices that are neither verbs devices nor GPUs', () => {
    // A user's process can hold a million fds on /dev/null: each kept would cost the agent's heap.
    const proc = procfs();
    writeProcess(proc, { pid: 81, comm: 'a', uverbs: [0], fds: 40 });
    const scanner = new Scanner(proc, 60_000, standardFdDevice);
    const scan = scanner.scan(0, new Problems(), VERBS);
    expect(pidsOf(scan.holders)).toEqual({ uverbs0: [81] });
    expect(scan.stats.fdsStated).toBe(4);
    expect(scanner.kept(81)?.links).toEqual(['/dev/infiniband/uverbs0']);
  });

  it('keeps the numbers of a table larger than LISTING_FDS, and reads only its new fds when it changes', () => {
    const proc = procfs();
    const fds = LISTING_FDS + 100;
    writeProcess(proc, { pid: 82, comm: 'many', fds });
    const scanner = new Scanner(proc, 60_000, standardFdDevice);
    expect(scanner.scan(0, new Problems(), VERBS).stats.fdLinksRead).toBe(fds);
    // A bit an fd (a dense table), where the names joined take some 40 KiB.
    expect(scanner.kept(82)?.listing).toBeLessThanOrEqual(fds / 8 + 1);
    expect(scanner.scan(1000, new Problems(), VERBS).stats.fdLinksRead).toBe(0);
    // One fd closed and another opened on a verbs device: the same count, another table.
    const fdDir = path.join(proc, '82', 'fd');
    fs.rmSync(path.join(fdDir, '500'));
    fs.symlinkSync('/dev/infiniband/uverbs0', path.join(fdDir, String(fds)));
    const changed = scanner.scan(2000, new Problems(), VERBS);
    expect(changed.stats.fdLinksRead).toBe(1);
    expect(pidsOf(changed.holders)).toEqual({ uverbs0: [82] });
    expect(scanner.scan(3000, new Problems(), VERBS).stats.fdLinksRead).toBe(0);
    // The fd on the device closed: the table changed, nothing new to read, and it holds nothing.
    fs.rmSync(path.join(fdDir, String(fds)));
    const closed = scanner.scan(4000, new Problems(), VERBS);
    expect(closed.stats.fdLinksRead).toBe(0);
    expect(closed.holders.size).toBe(0);
  });

  it('keeps large tables numbers within the room it is given, and the same ones at a full rescan', () => {
    const proc = procfs();
    const fds = LISTING_FDS + 100;
    for (const pid of [85, 86, 87]) writeProcess(proc, { pid, comm: 'many', fds });
    const bitmap = (fds >>> 3) + 1;
    // Room for two bitmaps: the third table keeps a digest.
    const scanner = new Scanner(proc, 60_000, standardFdDevice, undefined, undefined, 2 * bitmap + 10);
    const sizes = (): (number | undefined)[] => [85, 86, 87].map((pid) => scanner.kept(pid)?.listing);
    scanner.scan(0, new Problems(), VERBS);
    expect(sizes()).toEqual([bitmap, bitmap, expect.any(Number)]);
    expect(sizes()[2]).toBeLessThan(64);
    // A full rescan makes every entry again: each table's own bytes are its to remake.
    expect(scanner.scan(60_000, new Problems(), VERBS).stats.fullRescan).toBe(true);
    expect(sizes().slice(0, 2)).toEqual([bitmap, bitmap]);
    expect(sizes()[2]).toBeLessThan(64);
    // One gone: its room is free from the scan after the one that no longer finds it, and goes to
    // the next table read whole (the third's, changed, then read only for its new fds).
    removeProcess(proc, 85);
    scanner.scan(61_000, new Problems(), VERBS);
    fs.symlinkSync('/dev/infiniband/uverbs0', path.join(proc, '87', 'fd', String(fds)));
    const changed = scanner.scan(62_000, new Problems(), VERBS);
    expect(changed.stats.fdLinksRead).toBe(fds + 1);
    expect(pidsOf(changed.holders)).toEqual({ uverbs0: [87] });
    expect(sizes()).toEqual([undefined, bitmap, (fds >>> 3) + 1]);
    fs.symlinkSync('/dev/infiniband/uverbs1', path.join(proc, '87', 'fd', String(fds + 1)));
    expect(scanner.scan(63_000, new Problems(), VERBS).stats.fdLinksRead).toBe(1);
  });

  it('keeps a digest of a large table whose names are not fd numbers, and reads it whole when it changes', () => {
    // Not procfs (fd names as the kernel writes them): what is new cannot be told by number.
    const proc = procfs();
    const fds = LISTING_FDS + 100;
    writeProcess(proc, { pid: 84, comm: 'many', fds });
    const fdDir = path.join(proc, '84', 'fd');
    fs.renameSync(path.join(fdDir, '7'), path.join(fdDir, '007'));
    const scanner = new Scanner(proc, 60_000, standardFdDevice);
    expect(scanner.scan(0, new Problems(), VERBS).stats.fdLinksRead).toBe(fds);
    expect(scanner.kept(84)?.listing).toBeLessThan(64);
    expect(scanner.scan(1000, new Problems(), VERBS).stats.fdLinksRead).toBe(0);
    fs.symlinkSync('/dev/infiniband/uverbs0', path.join(fdDir, String(fds)));
    const changed = scanner.scan(2000, new Problems(), VERBS);
    expect(changed.stats.fdLinksRead).toBe(fds + 1);
    expect(pidsOf(changed.holders)).toEqual({ uverbs0: [84] });
  });

  it('keeps the names of a table up to LISTING_FDS, and reads only the fds new since', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 83, comm: 'a', fds: 300 });
    const scanner = new Scanner(proc, 60_000, standardFdDevice);
    scanner.scan(0, new Problems(), VERBS);
    expect(scanner.kept(83)?.listing).toBeGreaterThan(300);
    fs.symlinkSync('/dev/infiniband/uverbs0', path.join(proc, '83', 'fd', '300'));
    const later = scanner.scan(1000, new Problems(), VERBS);
    expect(later.stats.fdLinksRead).toBe(1);
    expect(pidsOf(later.holders)).toEqual({ uverbs0: [83] });
  });

  it('stats the real /proc: a held character device is known by the number sysfs gives it', () => {
    // /dev/full seen through a path of its own (a symlink named uverbs0): the fd's stat is /dev/full.
    const dir = tmpDir();
    fs.symlinkSync('/dev/full', path.join(dir, 'uverbs0'));
    const fd = fs.openSync(path.join(dir, 'uverbs0'), 'r');
    try {
      // /dev/full is 1:7 on every Linux.
      const verbs = (): Map<string, string> => new Map([['1:7', 'uverbs0']]);
      const scan = new Scanner('/proc', 60_000).scan(0, new Problems(), verbs);
      expect(scan.holders.get('uverbs0')).toContainEqual({ pid: process.pid, paths: ['/dev/full'] });
    } finally {
      fs.closeSync(fd);
    }
  });

  it('reads a real fd table across its pauses: a device held past 300 fds, the working directory back at each pause', () => {
    // This process's own fds on the real /proc: 300 on /dev/null, then /dev/full by a path named
    // like a verbs device, so the scan pauses within the table (a slice of 0 ms) before it.
    const dir = tmpDir();
    fs.symlinkSync('/dev/full', path.join(dir, 'uverbs0'));
    const fds = Array.from({ length: 300 }, () => fs.openSync('/dev/null', 'r'));
    fds.push(fs.openSync(path.join(dir, 'uverbs0'), 'r'));
    const home = process.cwd();
    const scanner = new Scanner('/proc', 60_000, undefined, 0);
    try {
      const full = deviceNumber(fs.statSync('/dev/full').rdev);
      const verbs = (): Map<string, string> => new Map([[full, 'uverbs0']]);
      const { pauses, scan } = pausing(scanner.scanSteps(0, new Problems(), verbs), home);
      // More pauses than processes: some fell within fd tables.
      expect(pauses).toBeGreaterThan(scan.stats.processes);
      expect(scan.holders.get('uverbs0')).toContainEqual({ pid: process.pid, paths: ['/dev/full'] });
    } finally {
      scanner.stop(); // any probe another process's fds set off
      for (const fd of fds) fs.closeSync(fd);
    }
  });

  it('on the real /proc, keeps a large table as its fd numbers and reads only an fd opened since', () => {
    // This process's own table, past LISTING_FDS: its fd numbers as the kernel lists them. Every
    // other process is left out (covered), so the links counted are this process's.
    const dir = tmpDir();
    fs.symlinkSync('/dev/full', path.join(dir, 'uverbs0'));
    const fds = Array.from({ length: LISTING_FDS + 100 }, () => fs.openSync('/dev/null', 'r'));
    const scanner = new Scanner('/proc', 3_600_000);
    const onlyThis = { skip: true, test: (pid: number) => pid !== process.pid };
    try {
      const full = deviceNumber(fs.statSync('/dev/full').rdev);
      const verbs = (): Map<string, string> => new Map([[full, 'uverbs0']]);
      const first = scanner.scan(0, new Problems(), verbs, onlyThis);
      const highest = Math.max(...fs.readdirSync('/proc/self/fd').map(Number));
      expect(first.stats.fdLinksRead).toBeGreaterThan(LISTING_FDS);
      // About a bit an fd, where the names joined take some 45,000 characters.
      expect(scanner.kept(process.pid)?.listing).toBeLessThan(LISTING_FDS);
      // The device opened under a number the table did not have (the lowest free one may be one
      // closed since: the window the full rescan closes), so any hole is filled first.
      for (let fd = fs.openSync('/dev/null', 'r'); ; fd = fs.openSync('/dev/null', 'r')) {
        fds.push(fd);
        if (fd >= highest) break;
      }
      fds.push(fs.openSync(path.join(dir, 'uverbs0'), 'r'));
      const later = scanner.scan(1000, new Problems(), verbs, onlyThis);
      expect(later.holders.get('uverbs0')).toEqual([{ pid: process.pid, paths: ['/dev/full'] }]);
      // The new fd, and whatever else this process opened meanwhile: not its whole table again.
      expect(later.stats.fdLinksRead).toBeGreaterThan(0);
      expect(later.stats.fdLinksRead).toBeLessThan(LISTING_FDS / 8);
    } finally {
      scanner.stop();
      for (const fd of fds) fs.closeSync(fd);
    }
  });

  it('keeps a process whose fd on a network filesystem could not be asked unreadable, without reading it again until the next full rescan', async () => {
    // Synthetic processes (written like the kernel's), each with one fd on an NFS mount that allows
    // devices, named like a verbs device: asked with a real stat in a child, which fails. The
    // probe asks one a cycle: the second process waits for the next cycle, read again then.
    const proc = procfs();
    for (const pid of [90, 91]) {
      writeProcess(proc, { pid, comm: 'a', fds: 3 });
      fs.symlinkSync('/nonexistent-nfs/uverbs0', path.join(proc, String(pid), 'fd', '3'));
      fs.writeFileSync(path.join(proc, String(pid), 'fdinfo', '3'), 'pos:\t0\nflags:\t0100000\nmnt_id:\t40\n');
      fs.appendFileSync(
        path.join(proc, String(pid), 'mountinfo'),
        '40 28 0:50 / /nonexistent-nfs rw - nfs4 srv:/x rw\n',
      );
    }
    // A deadline far past what a loaded machine takes to start stat: its answer, never a timeout.
    const scanner = new Scanner(proc, 60_000, undefined, undefined, { maxPerCycle: 1, timeoutMs: 60_000 });
    const failed = (pid: number) => ({
      pid,
      errno: 'uncertain',
      uncertain: expect.stringMatching(/uverbs0: on nfs4, stat failed/),
    });
    try {
      const scan = (at: number) => runStepsYielding(scanner.scanSteps(at, new Problems(), VERBS));
      const first = await scan(0);
      expect(first.unreadable).toEqual([
        failed(90),
        { pid: 91, errno: 'uncertain', uncertain: '/nonexistent-nfs/uverbs0 is on nfs4' },
      ]);
      expect(Object.fromEntries(first.stats.fdProbes)).toEqual({ failed: 1, skipped: 1 });
      const next = await scan(1000);
      expect(next.unreadable).toEqual([failed(90), failed(91)]);
      // Only the waiting process is read again (its 4 links, before its question and after the
      // answer: every link read is counted), and asked.
      expect(next.stats.fdLinksRead).toBe(2 * 4);
      expect(Object.fromEntries(next.stats.fdProbes)).toEqual({ failed: 1 });
      const steady = await scan(2000);
      expect(steady.unreadable).toEqual(next.unreadable);
      expect(steady.stats.fdLinksRead).toBe(0);
      expect(Object.fromEntries(steady.stats.fdProbes)).toEqual({});
      const full = await scan(60_000);
      // Both read again, and asked again as the first cycle asked them.
      expect(full.unreadable).toEqual(first.unreadable);
      expect(full.stats.fdLinksRead).toBeGreaterThan(0);
      expect(Object.fromEntries(full.stats.fdProbes)).toEqual({ failed: 1, skipped: 1 });
    } finally {
      scanner.stop();
    }
  });

  it('passes over a process that exits between the listing and its reads', () => {
    const proc = procfs();
    fs.mkdirSync(path.join(proc, '40'));
    const problems = new Problems();
    const scan = new Scanner(proc, 60_000, standardFdDevice).scan(0, problems, VERBS);
    expect(scan.unreadable).toEqual([]);
    expect(problems.list()).toEqual([]);
  });
});

describe('startTime', () => {
  it('reads field 22 even when the command name has spaces and parentheses', () => {
    const rest = Array.from({ length: 50 }, (_, i) => (i === 19 ? '123456' : '0')).join(' ');
    expect(startTime(`77 (a b) (c)) ${rest}`)).toBe('123456');
  });

  it('gives nothing for a record cut short, and a last field without its newline', () => {
    const fields = (n: number): string => Array.from({ length: n }, (_, i) => String(i + 3)).join(' ');
    expect(startTime(`9 (x) ${fields(15)}\n`)).toBe('');
    expect(startTime(`9 (x) ${fields(20)}\n`)).toBe('22');
    expect(startTime(`9 (x) ${fields(20)}`)).toBe('22');
    expect(isKernelThread(`9 (x) ${fields(5)}\n`)).toBe(false);
  });

  it("agrees with the kernel's record of this process", () => {
    const stat = fs.readFileSync('/proc/self/stat', 'latin1');
    const fields = stat
      .slice(stat.lastIndexOf(')') + 2)
      .trim()
      .split(' ');
    expect(startTime(stat)).toBe(fields[19]);
    expect(isKernelThread(stat)).toBe(false);
  });
});

describe('commOf', () => {
  it('reads the name between the first "(" and the last ")", UTF-8 included, as /proc/<pid>/comm has it', () => {
    const stat = (name: string) => Buffer.from(`77 (${name}) S 1 77 77 0 -1`, 'utf8').toString('latin1');
    expect(commOf(stat('a b) (c)'))).toBe('a b) (c)');
    expect(commOf(stat('wéka😀'))).toBe('wéka😀');
    expect(commOf(stat(''))).toBe('');
  });

  it("names each process scanned by the comm in its stat, and follows a reused PID's new name", () => {
    const proc = procfs();
    writeProcess(proc, { pid: 23, comm: 'old', fds: 2, startTime: 100 });
    const scanner = new Scanner(proc, 60_000, standardFdDevice);
    expect(scanner.scan(0, new Problems(), VERBS).names.get(23)).toBe('old');
    removeProcess(proc, 23);
    writeProcess(proc, { pid: 23, comm: 'new name', fds: 2, startTime: 200 });
    expect(scanner.scan(1000, new Problems(), VERBS).names.get(23)).toBe('new name');
    // Renamed in place (prctl), same start time and fds: on a disk filesystem, whose inodes tell
    // nothing, the stat is read each cycle and the cached entry takes the new name.
    renameProcess(proc, 23, 'renamed');
    const scan = scanner.scan(2000, new Problems(), VERBS);
    expect(scan.stats.fdLinksRead).toBe(0);
    expect(scan.names.get(23)).toBe('renamed');
  });
});

describe.runIf(nativeReaderTested)('FdScanner with the native reader', () => {
  it.each(['disk', 'tmpfs'] as const)(
    'lists a table past LISTING_FDS through fs alone once it keeps its numbers (procfs on %s)',
    (on) => {
      const proc = procfs(on);
      writeProcess(proc, { pid: 60, comm: 'big', fds: LISTING_FDS + 10 });
      writeProcess(proc, { pid: 61, comm: 'small', fds: 10 });
      const native = nativeReader();
      const listed: string[] = [];
      const counting: FdReader = {
        listing: (dir, max) => (listed.push(path.basename(path.dirname(dir))), native.listing(dir, max)),
        pathLinks: (dir, max) => native.pathLinks(dir, max),
      };
      const scanner = new FdScanner(proc, 60_000, standardFdDevice, undefined, undefined, undefined, counting);
      expect(scanner.scan(0, new Problems(), VERBS).stats.fdLinksRead).toBe(LISTING_FDS + 10 + 10);
      listed.length = 0;
      expect(scanner.scan(1000, new Problems(), VERBS).stats.fdLinksRead).toBe(0);
      expect(listed).toEqual(['61']);
    },
  );
});
