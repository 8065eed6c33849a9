/**
 * Character devices that stand in for uverbs devices on a host without HCAs. The node agent knows a
 * holder by the device number its fd refers to, so a stand-in must be a real device a process can
 * open: a node made with mknod at the numbers of one every Linux has (/dev/full is 1:7), with
 * sysfs's `uverbsN/dev` giving those numbers. Each stand-in is a distinct device, and one that no
 * process holds when it is picked, so only the test's own processes hold it.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { deviceNumber } from '../../src/node/roots.js';

/** Devices that open without effect (no reads, no ioctls follow), in order of preference. */
const POOL = ['/dev/full', '/dev/zero', '/dev/random', '/dev/urandom', '/dev/fuse', '/dev/net/tun'];

/** Device numbers every process on the host holds an fd on now (stat of every fd). */
export function heldDevices(): Set<string> {
  const held = new Set<string>();
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const st = fs.statSync(`/proc/${pid}/fd/${fd}`, { throwIfNoEntry: false });
        if (st?.isCharacterDevice()) held.add(deviceNumber(st.rdev));
      } catch {
        // unreadable (another namespace's PID 1 on some hosts): what it holds cannot be known here
      }
    }
  }
  return held;
}

export interface StandIn {
  /** `major:minor`, as sysfs `uverbsN/dev` says it. */
  readonly dev: string;
  /** The device it borrows its numbers from. */
  readonly of: string;
}

/** `count` distinct devices of the pool that exist here and that no process holds now. */
export function pickStandIns(count: number): StandIn[] {
  const held = heldDevices();
  const out: StandIn[] = [];
  for (const of of POOL) {
    const st = fs.statSync(of, { throwIfNoEntry: false });
    if (!st?.isCharacterDevice()) continue;
    const dev = deviceNumber(st.rdev);
    if (held.has(dev) || out.some((s) => s.dev === dev)) continue;
    out.push({ dev, of });
    if (out.length === count) return out;
  }
  throw new Error(`only ${out.length} of ${count} unheld character devices among ${POOL.join(', ')}`);
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
  const out: number[] = [];
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    const holds = fds.some((fd) => {
      try {
        const st = fs.statSync(`/proc/${pid}/fd/${fd}`, { throwIfNoEntry: false });
        return st?.isCharacterDevice() === true && deviceNumber(st.rdev) === dev;
      } catch {
        return false;
      }
    });
    if (holds) out.push(Number(pid));
  }
  return out;
}
