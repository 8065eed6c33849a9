/**
 * How long ago a process started, from procfs alone: its start time (field 22 of
 * /proc/<pid>/stat, clock ticks after boot) against /proc/uptime (seconds after boot). Both count
 * from boot, so no wall clock and no boot time are needed. For `explain --job`'s elapsed time.
 */
import { STAT_READ, startTime } from './owners.js';
import { join, readSmall } from './roots.js';

/** USER_HZ: the unit of /proc/<pid>/stat's start time, 100 on every Linux architecture this runs on. */
const USER_HZ = 100;

/** Seconds since boot from /proc/uptime; undefined when it cannot be read. */
export function uptimeSeconds(procfs: string): number | undefined {
  const r = readSmall(join(procfs, 'uptime'));
  const up = r.ok ? Number(r.value.split(' ')[0]) : NaN;
  return Number.isFinite(up) && up >= 0 ? up : undefined;
}

/** Seconds since the process started, given the uptime; undefined when it is gone or unreadable. */
export function processAgeSeconds(procfs: string, pid: number, uptime: number): number | undefined {
  const r = readSmall(join(procfs, String(pid), 'stat'), STAT_READ);
  if (!r.ok) return undefined;
  const ticks = startTime(r.value);
  if (!/^\d{1,20}$/.test(ticks)) return undefined;
  const age = uptime - Number(ticks) / USER_HZ;
  return age >= 0 ? age : undefined;
}
