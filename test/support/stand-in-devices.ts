/**
 * Character devices that stand in for uverbs devices on a host without HCAs. The node agent knows a
 * holder by the device number its fd refers to, so a stand-in must be a real device a process can
 * open: a node made with mknod at the numbers of a device the kernel has, with sysfs's
 * `uverbsN/dev` giving those numbers. Each stand-in is a distinct device, one that nothing on the
 * host opens in passing (not /dev/zero, /dev/null, /dev/random, /dev/urandom, /dev/fuse, which
 * any process or another test may hold), and one no process holds when it is picked, so only the
 * test's own processes hold it.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { deviceNumber } from '../../src/node/read/roots.js';

/**
 * Devices that open without effect (no reads or ioctls follow) and that only a tool meant for
 * them opens, in order of preference. Where the kernel fixes the numbers (`dev`), a node is made
 * at them when the driver is registered (/proc/misc) even if /dev has no such node; the others
 * (dynamic misc minors) count only with their node in /dev.
 */
const POOL: readonly { readonly of: string; readonly dev?: string }[] = [
  { of: '/dev/full', dev: '1:7' },
  { of: '/dev/loop-control', dev: '10:237' },
  { of: '/dev/btrfs-control', dev: '10:234' },
  { of: '/dev/uhid', dev: '10:239' },
  { of: '/dev/uinput', dev: '10:223' },
  { of: '/dev/vhost-vsock', dev: '10:241' },
  { of: '/dev/vhost-net', dev: '10:238' },
  { of: '/dev/net/tun', dev: '10:200' },
  { of: '/dev/kvm', dev: '10:232' },
  { of: '/dev/userfaultfd' },
  { of: '/dev/vsock' },
];

/** A process holding an fd on a device. */
export interface Holder {
  readonly pid: number;
  readonly comm: string;
}

/** Every process holding an fd on a character device now, by device number (stat of its fds). */
export function heldDevices(): Map<string, Holder[]> {
  const held = new Map<string, Holder[]>();
  const fuse = fuseMounts();
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    for (const dev of charDevicesOf(pid, fuse)) {
      const list = held.get(dev) ?? [];
      list.push({ pid: Number(pid), comm: commOf(pid) });
      held.set(dev, list);
    }
  }
  return held;
}

/**
 * Where FUSE filesystems are mounted now: a stat of a file there may never return (the FUSE tests
 * mount some whose getattr blocks), so these helpers never stat an fd whose path is under one.
 */
function fuseMounts(): string[] {
  return fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' '))
    .filter((f) => /^fuse/.test(f[f.indexOf('-', 6) + 1] ?? ''))
    .map((f) => `${f[4] as string}/`);
}

/** The character devices `pid`'s fds refer to (stat of each fd that is a path outside FUSE mounts). */
function charDevicesOf(pid: string, fuse: readonly string[]): Set<string> {
  const out = new Set<string>();
  let fds: string[];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return out;
  }
  for (const fd of fds) {
    try {
      const link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (!link.startsWith('/') || fuse.some((m) => link.startsWith(m))) continue;
      const st = fs.statSync(`/proc/${pid}/fd/${fd}`, { throwIfNoEntry: false });
      if (st?.isCharacterDevice()) out.add(deviceNumber(st.rdev));
    } catch {
      // unreadable (another namespace's PID 1 on some hosts): what it holds cannot be known here
    }
  }
  return out;
}

function commOf(pid: string): string {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '?';
  }
}

export interface StandIn {
  /** `major:minor`, as sysfs `uverbsN/dev` says it. */
  readonly dev: string;
  /** The device it borrows its numbers from. */
  readonly of: string;
}

/** Misc device minors the kernel has registered. */
function registeredMisc(): Set<string> {
  try {
    return new Set(
      fs
        .readFileSync('/proc/misc', 'utf8')
        .split('\n')
        .map((l) => l.trim().split(/\s+/)[0])
        .filter((m): m is string => m !== undefined && m !== '')
        .map((m) => `10:${m}`),
    );
  } catch {
    return new Set();
  }
}

/** The devices of the pool a stand-in can be made of here: a node in /dev, or a registered misc minor. */
export function standInPool(): StandIn[] {
  const misc = registeredMisc();
  const out: StandIn[] = [];
  for (const p of POOL) {
    const st = fs.statSync(p.of, { throwIfNoEntry: false });
    const dev = st?.isCharacterDevice()
      ? deviceNumber(st.rdev)
      : p.dev !== undefined && misc.has(p.dev)
        ? p.dev
        : undefined;
    if (dev !== undefined && !out.some((s) => s.dev === dev)) out.push({ dev, of: p.of });
  }
  return out;
}

/**
 * `count` distinct devices of the pool that no process holds now; when there are fewer, the error
 * names the processes holding the others.
 */
export function pickStandIns(count: number): StandIn[] {
  const held = heldDevices();
  const pool = standInPool();
  const out = pool.filter((s) => !held.has(s.dev)).slice(0, count);
  if (out.length === count) return out;
  const holders = pool
    .filter((s) => held.has(s.dev))
    .map(
      (s) => `${s.of} (${s.dev}) held by ${(held.get(s.dev) ?? []).map((h) => `PID ${h.pid} (${h.comm})`).join(', ')}`,
    );
  throw new Error(
    `only ${out.length} of ${count} stand-in devices are free among ${pool.map((s) => s.of).join(', ')}` +
      (holders.length > 0 ? `: ${holders.join('; ')}` : ''),
  );
}

/**
 * A device node at `file` for `s` (mode 0666: a job of another uid opens it too). Like an
 * exclusive create, it fails with code EEXIST when the name exists.
 */
export function mknodStandIn(file: string, s: StandIn): void {
  const [major, minor] = s.dev.split(':') as [string, string];
  try {
    execFileSync('mknod', ['-m', '666', file, 'c', major, minor], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    if (fs.lstatSync(file, { throwIfNoEntry: false }) !== undefined)
      throw Object.assign(new Error(`${file} exists`), { code: 'EEXIST' });
    throw e;
  }
}

const LEASE = '/tmp/slurm-otel-stand-in-devices.lease';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The host's stand-in devices for one test at a time: every agent reads the whole /proc, so two
 * tests holding /dev/full at once would each see the other's processes as holders. Waits (bounded)
 * for a lease held by a live process; takes over one whose holder is gone. Returns its release.
 */
export async function leaseStandIns(timeoutMs = 600_000): Promise<() => void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      fs.writeFileSync(LEASE, String(process.pid), { flag: 'wx' });
      return () => {
        if (fs.readFileSync(LEASE, 'utf8').trim() === String(process.pid)) fs.rmSync(LEASE, { force: true });
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const holder = Number(fs.readFileSync(LEASE, { encoding: 'utf8', flag: 'r' }).trim());
    if (!Number.isInteger(holder) || !alive(holder)) {
      fs.rmSync(LEASE, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`${LEASE} held by live PID ${holder} for ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** PIDs whose fds refer to the device `dev` (`major:minor`), by stat: what the agent should find. */
export function holdersOfDevice(dev: string): number[] {
  return (heldDevices().get(dev) ?? []).map((h) => h.pid);
}
