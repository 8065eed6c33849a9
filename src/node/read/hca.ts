/**
 * HCA inventory and counters from sysfs (`class/infiniband/<dev>/`), and the
 * uverbs → HCA map (`class/infiniband_verbs/uverbsN/ibdev`). A counter that is
 * missing, unreadable or reads `N/A (no PMA)` is absent, never 0.
 */
import fs from 'node:fs';
import type { Problems } from './problems.js';
import {
  DEV_RE,
  join,
  listDir,
  listSubdirs,
  openAttribute,
  parseCounter,
  readSmall,
  rereadAttribute,
} from './roots.js';
import { type Failure } from './result.js';

export interface PortReading {
  readonly port: string;
  readonly state?: string;
  /** The id before the colon of `state` ("4: ACTIVE" → 4). */
  readonly stateId?: number;
  readonly physState?: string;
  readonly physStateId?: number;
  readonly rate?: string;
  /** `rate` in bytes per second: Gb/s × 125,000,000. */
  readonly rateBytesPerSecond?: number;
  readonly linkLayer?: string;
  /** counters/, hw_counters/ and counters_ext/ by file name, exact; counters/ wins a name clash. */
  readonly counters: ReadonlyMap<string, bigint>;
}

export interface HcaReading {
  readonly device: string;
  readonly boardId?: string;
  readonly firmware?: string;
  readonly hcaType?: string;
  readonly nodeGuid?: string;
  readonly ports: readonly PortReading[];
}

export interface HcaScan {
  /** False when sysfs has no infiniband class at all (no HCA on this node). */
  readonly present: boolean;
  readonly hcas: readonly HcaReading[];
  /**
   * Why this reading cannot stand for the node (class/infiniband unlistable for any reason
   * but ENOENT, or the agent out of file descriptors): the cycle fails and keeps its last data.
   */
  readonly failure?: string;
  /** Devices the operator left out: listed with their ports, nothing of theirs read. */
  readonly leftOut?: readonly LeftOutHca[];
}

/** A device left out of the reading: its name and ports, from directory listings alone. */
export interface LeftOutHca {
  readonly device: string;
  readonly ports: readonly string[];
}

// hw_counters entries that are settings, not counts.
const NOT_COUNTERS = new Set(['lifespan']);
// The driver does not support this counter: it is absent, not an error.
const UNSUPPORTED = new Set(['EINVAL', 'EOPNOTSUPP', 'ENOTSUP']);
// Out of descriptors or memory: nothing read meanwhile can be trusted to be complete.
const EXHAUSTED = new Set(['EMFILE', 'ENFILE', 'ENOMEM']);
// IB ports are numbered 1..255; a switch's management port is 0.
const PORT_RE = /^(?:0|[1-9]\d{0,2})$/;

/** One scan's problems plus the first failure that voids it. */
class ScanContext {
  failure?: string;
  constructor(readonly problems: Problems) {}

  /** Counts a failed read; a resource exhaustion also voids the scan. */
  note(r: Failure): void {
    if (r.kind === 'gone') return;
    this.problems.add('sysfs', r.kind, r.detail);
    if (r.code !== undefined && EXHAUSTED.has(r.code)) this.failure ??= r.detail;
  }
}

/**
 * What does not change while a device stays registered: its identity files, ports, link layers and
 * counter file names. Kept between cycles and checked by one stat of each directory it came from
 * (inode and mtime: a device registered again gets new sysfs directories; a copied or synthetic
 * tree changes a directory's mtime when a file is added or removed). A device-only cycle then reads
 * only what moves: counters, state, phys_state and rate.
 */
export class HcaCache {
  readonly byDevice = new Map<string, StaticHca>();
  private held = 0;

  /**
   * @param holdFiles counter files kept open between cycles, at most this many (0: none). Each
   *   then costs one read per cycle instead of three system calls; a long-running agent holds
   *   them, a one-off reading (explain, --once) need not.
   */
  constructor(private readonly holdFiles = 0) {}

  /** The fd of a counter file kept open, opened on first use while the limit allows. */
  fdOf(g: CounterGroup, i: number): number | undefined {
    const fd = g.fds[i];
    if (fd !== undefined || this.held >= this.holdFiles) return fd ?? undefined;
    const opened = openAttribute(`${g.dir}/${g.files[i] as string}`);
    g.fds[i] = opened ?? null;
    if (opened !== undefined) this.held++;
    return opened;
  }

  /** Closes the fds of a device's counter files (it was registered again, or is gone). */
  release(s: StaticHca | undefined): void {
    for (const g of s?.ports.flatMap((p) => [...p.groups, p.live]) ?? [])
      for (const [i, fd] of g.fds.entries()) {
        if (typeof fd === 'number') {
          fs.closeSync(fd);
          this.held--;
        }
        g.fds[i] = undefined;
      }
  }

  close(): void {
    for (const s of this.byDevice.values()) this.release(s);
    this.byDevice.clear();
  }
}

interface StaticHca {
  readonly stamp: string;
  readonly boardId?: string;
  readonly firmware?: string;
  readonly hcaType?: string;
  readonly nodeGuid?: string;
  readonly ports: readonly StaticPort[];
}

interface StaticPort {
  readonly port: string;
  readonly dir: string;
  readonly linkLayer?: string;
  /** counters/, hw_counters/, counters_ext/ in that order: the files each held when listed. */
  readonly groups: readonly CounterGroup[];
  /** state, phys_state and rate: read every cycle, kept open like the counters. */
  readonly live: CounterGroup;
}

interface CounterGroup {
  readonly dir: string;
  readonly stamp: string;
  readonly files: readonly string[];
  /** Per file: its fd kept open, null when it could not be, undefined when not opened yet. */
  readonly fds: (number | null | undefined)[];
}

// Kernels before 4.5 (mlx4) keep separate 64-bit counters in counters_ext (port_rcv_data_64, ...):
// exported under their own names, they never replace a counters/ value.
const GROUPS = ['counters', 'hw_counters', 'counters_ext'] as const;

/** inode and mtime of a directory; `none` when it does not exist. */
function stampOf(dir: string): string {
  const st = fs.statSync(dir, { throwIfNoEntry: false });
  return st === undefined ? 'none' : `${st.ino}:${st.mtimeMs}`;
}

/**
 * Every HCA's identity, ports and counters. `leftOut` names the devices the operator left out:
 * none of their files is opened (a management HCA's driver may be slow or odd to read), only
 * their port directory listed, for explain to show them as excluded.
 */
export function readHcas(
  sysfs: string,
  problems: Problems,
  cache?: HcaCache,
  leftOut: (device: string) => boolean = () => false,
): HcaScan {
  const classDir = join(sysfs, 'class', 'infiniband');
  const devices = listDir(classDir);
  if (!devices.ok) {
    if (devices.kind === 'gone') return { present: false, hcas: [] };
    problems.add('sysfs', devices.kind, devices.detail);
    return { present: true, hcas: [], failure: `cannot list ${classDir}: ${devices.detail}` };
  }
  const kept = devices.value.filter((d) => !leftOut(d)).sort();
  const ctx = new ScanContext(problems);
  const hcas: HcaReading[] = [];
  for (const device of kept) {
    const s = staticHca(`${classDir}/${device}`, device, ctx, cache);
    if (s) hcas.push(readHca(device, s, ctx, cache?.byDevice.get(device) === s ? cache : undefined));
  }
  if (cache) forgetOthers(cache, kept);
  const skipped = devices.value
    .filter(leftOut)
    .sort()
    .map((d) => leftOutHca(classDir, d));
  const scan = { present: true, hcas, ...(skipped.length > 0 ? { leftOut: skipped } : {}) };
  return ctx.failure === undefined ? scan : { ...scan, failure: ctx.failure };
}

/** Closes and drops what the cache holds of devices no longer read (gone, or left out). */
function forgetOthers(cache: HcaCache, kept: readonly string[]): void {
  for (const [d, s] of cache.byDevice)
    if (!kept.includes(d)) {
      cache.release(s);
      cache.byDevice.delete(d);
    }
}

function leftOutHca(classDir: string, device: string): LeftOutHca {
  const listed = listSubdirs(join(classDir, device, 'ports'));
  const ports = listed.ok ? listed.value.filter((p) => PORT_RE.test(p)) : [];
  return { device, ports: ports.sort((a, b) => Number(a) - Number(b)) };
}

/** The cached static part of a device when its directories are unchanged, else read again (and kept if clean). */
function staticHca(dir: string, device: string, ctx: ScanContext, cache: HcaCache | undefined): StaticHca | undefined {
  const known = cache?.byDevice.get(device);
  if (
    known &&
    known.stamp === stampOf(dir) &&
    known.ports.every((p) => [...p.groups, p.live].every((g) => g.stamp === stampOf(g.dir)))
  )
    return known;
  cache?.release(known);
  cache?.byDevice.delete(device);
  const before = ctx.problems.total();
  const fresh = readStatic(dir, ctx);
  if (cache && fresh && ctx.problems.total() === before) cache.byDevice.set(device, fresh);
  return fresh;
}

function readStatic(dir: string, ctx: ScanContext): StaticHca | undefined {
  const stamp = stampOf(dir);
  const listed = listSubdirs(join(dir, 'ports'));
  if (!listed.ok) {
    ctx.note(listed);
    return undefined;
  }
  const ports = listed.value.filter((p) => {
    if (PORT_RE.test(p) && Number(p) <= 255) return true;
    ctx.problems.add('sysfs', 'malformed', `${join(dir, 'ports', p)}: not a port number`);
    return false;
  });
  return {
    stamp,
    boardId: attr(dir, 'board_id', ctx),
    firmware: attr(dir, 'fw_ver', ctx),
    hcaType: attr(dir, 'hca_type', ctx),
    nodeGuid: attr(dir, 'node_guid', ctx),
    ports: ports.sort((a, b) => Number(a) - Number(b)).map((p) => staticPort(`${dir}/ports/${p}`, p, ctx)),
  };
}

function staticPort(dir: string, port: string, ctx: ScanContext): StaticPort {
  const groups = GROUPS.map((g) => {
    const groupDir = `${dir}/${g}`;
    const stamp = stampOf(groupDir);
    const names = listDir(groupDir);
    if (!names.ok) ctx.note(names);
    const files = names.ok ? names.value.filter((f) => !NOT_COUNTERS.has(f)) : [];
    return { dir: groupDir, stamp, files, fds: [] };
  });
  const live = { dir, stamp: stampOf(dir), files: LIVE, fds: [] };
  return { port, dir, linkLayer: attr(dir, 'link_layer', ctx), groups, live };
}

const LIVE = ['state', 'phys_state', 'rate'];

function readHca(device: string, s: StaticHca, ctx: ScanContext, cache: HcaCache | undefined): HcaReading {
  const { boardId, firmware, hcaType, nodeGuid } = s;
  return { device, boardId, firmware, hcaType, nodeGuid, ports: s.ports.map((p) => readPort(p, ctx, cache)) };
}

function readPort(p: StaticPort, ctx: ScanContext, cache: HcaCache | undefined): PortReading {
  const { dir } = p;
  const counters = new Map<string, bigint>();
  for (const g of p.groups) readCounters(g, counters, ctx, cache);
  const state = liveAttr(p.live, 0, ctx, cache);
  const physState = liveAttr(p.live, 1, ctx, cache);
  const rate = liveAttr(p.live, 2, ctx, cache);
  return {
    port: p.port,
    state,
    stateId: parsed(state, parseStateId, `${dir}/state`, ctx),
    physState,
    physStateId: parsed(physState, parseStateId, `${dir}/phys_state`, ctx),
    rate,
    rateBytesPerSecond: parsed(rate, parseRate, `${dir}/rate`, ctx),
    linkLayer: p.linkLayer,
    counters,
  };
}

// A sysfs attribute is served whole by its first read: no second read to see the end.
const ATTRIBUTE = { whole: true } as const;

function readCounters(g: CounterGroup, into: Map<string, bigint>, ctx: ScanContext, cache: HcaCache | undefined): void {
  for (const [i, file] of g.files.entries()) {
    if (into.has(file)) continue;
    const fd = cache?.fdOf(g, i);
    const text = fd === undefined ? readSmall(`${g.dir}/${file}`, ATTRIBUTE) : rereadAttribute(fd, `${g.dir}/${file}`);
    if (!text.ok) {
      if (text.code === undefined || !UNSUPPORTED.has(text.code)) ctx.note(text);
      continue;
    }
    if (text.value.startsWith('N/A')) continue;
    const v = parseCounter(text.value);
    if (!v.ok) {
      ctx.problems.add('sysfs', 'malformed', `${g.dir}/${file}: ${v.detail}`);
      continue;
    }
    into.set(file, v.value);
  }
}

const UTF8_ATTRIBUTE = { utf8: true, whole: true } as const;

/** A port attribute read every cycle, through its fd kept open when the cache holds one. */
function liveAttr(g: CounterGroup, i: number, ctx: ScanContext, cache: HcaCache | undefined): string | undefined {
  const fd = cache?.fdOf(g, i);
  if (fd === undefined) return attr(g.dir, g.files[i] as string, ctx);
  const r = rereadAttribute(fd, `${g.dir}/${g.files[i] as string}`);
  if (r.ok) return r.value.trim();
  ctx.note(r);
  return undefined;
}

function attr(dir: string, name: string, ctx: ScanContext): string | undefined {
  const r = readSmall(`${dir}/${name}`, UTF8_ATTRIBUTE);
  if (r.ok) return r.value.trim();
  ctx.note(r);
  return undefined;
}

function parsed(
  text: string | undefined,
  parse: (t: string) => number | undefined,
  file: string,
  ctx: ScanContext,
): number | undefined {
  if (text === undefined) return undefined;
  const v = parse(text);
  if (v === undefined) ctx.problems.add('sysfs', 'malformed', `${file}: ${JSON.stringify(text.slice(0, 40))}`);
  return v;
}

/** `state` and `phys_state` read "<id>: <NAME>" ("4: ACTIVE", "5: LinkUp"). */
export function parseStateId(text: string): number | undefined {
  const m = /^(\d{1,3}):/.exec(text.trim());
  return m ? Number(m[1]) : undefined;
}

/** `rate` reads "<Gb/s> Gb/sec (<width> <speed>)", e.g. "2.5 Gb/sec (1X SDR)"; 1 Gb/s is 125,000,000 bytes/s. */
export function parseRate(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?) Gb\/sec\b/i.exec(text.trim());
  return m ? Math.round(Number(m[1]) * 125_000_000) : undefined;
}

const UVERBS_NAME_RE = /^uverbs\d+$/;

/** Device number → uverbs device, and what could not be read (each a gap: a holder may be missed). */
export interface VerbsDevices {
  readonly byDevice: ReadonlyMap<string, string>;
  readonly gaps: readonly string[];
}

/**
 * From `class/infiniband_verbs/uverbsN/dev` ("231:192"): what an fd's stat is matched against. No
 * class directory (no HCA) is an empty map.
 */
export function verbsByDevice(sysfs: string, problems: Problems): VerbsDevices {
  const dir = join(sysfs, 'class', 'infiniband_verbs');
  const byDevice = new Map<string, string>();
  const gaps: string[] = [];
  const names = listDir(dir);
  if (!names.ok) {
    if (names.kind !== 'gone') {
      problems.add('sysfs', names.kind, names.detail);
      gaps.push(`cannot list ${dir}: ${names.detail}`);
    }
    return { byDevice, gaps };
  }
  for (const name of names.value) {
    if (!UVERBS_NAME_RE.test(name)) continue;
    const r = readSmall(join(dir, name, 'dev'));
    if (!r.ok) {
      if (r.kind !== 'gone') {
        problems.add('sysfs', r.kind, r.detail);
        gaps.push(`${name}: device number unknown (${r.detail})`);
      }
      continue;
    }
    const dev = r.value.trim();
    if (DEV_RE.test(dev)) byDevice.set(dev, name);
    else {
      problems.add('sysfs', 'malformed', `${join(dir, name, 'dev')}: ${JSON.stringify(dev.slice(0, 40))}`);
      gaps.push(`${name}: device number unknown (malformed dev)`);
    }
  }
  return { byDevice, gaps };
}

/** uverbs devices resolved on demand, at most once per cycle each. */
export class UverbsMap {
  private readonly memo = new Map<string, string | undefined>();

  constructor(
    private readonly sysfs: string,
    private readonly problems: Problems,
  ) {}

  /** The HCA behind `uverbsN`, or undefined when sysfs cannot say. */
  device(uverbs: string): string | undefined {
    if (this.memo.has(uverbs)) return this.memo.get(uverbs);
    // UTF-8, as readdir gives the names of class/infiniband this is compared with.
    const r = readSmall(join(this.sysfs, 'class', 'infiniband_verbs', uverbs, 'ibdev'), { utf8: true });
    const dev = r.ok && r.value.trim() !== '' ? r.value.trim() : undefined;
    if (!r.ok) this.problems.add('sysfs', r.kind, r.detail);
    else if (dev === undefined) this.problems.add('sysfs', 'malformed', `${uverbs}/ibdev is empty`);
    this.memo.set(uverbs, dev);
    return dev;
  }
}

/** PMA counters narrower than 64 bits saturate at their maximum (drivers/infiniband/core/sysfs.c). */
export const PMA_WIDTH: Readonly<Record<string, number>> = {
  symbol_error: 16,
  port_rcv_errors: 16,
  port_rcv_remote_physical_errors: 16,
  port_rcv_switch_relay_errors: 16,
  port_xmit_discards: 16,
  VL15_dropped: 16,
  link_error_recovery: 8,
  link_downed: 8,
  local_link_integrity_errors: 4,
  excessive_buffer_overrun_errors: 4,
  port_xmit_wait: 32,
};

/** mlx5 Q counters and error counters: 32 bits, they wrap. */
export const WRAPS_32 = new Set([
  'rx_write_requests',
  'rx_read_requests',
  'rx_atomic_requests',
  'rx_dct_connect',
  'out_of_buffer',
  'out_of_sequence',
  'duplicate_request',
  'rnr_nak_retry_err',
  'packet_seq_err',
  'implied_nak_seq_err',
  'local_ack_timeout_err',
  'resp_local_length_error',
  'resp_cqe_error',
  'req_cqe_error',
  'req_remote_invalid_request',
  'req_remote_access_errors',
  'resp_remote_access_errors',
  'resp_cqe_flush_error',
  'req_cqe_flush_error',
  'req_transport_retries_exceeded',
  'req_rnr_retries_exceeded',
]);

export function saturated(counter: string, value: bigint): boolean {
  const w = PMA_WIDTH[counter];
  return w !== undefined && value >= (1n << BigInt(w)) - 1n;
}

const TWO_32 = 1n << 32n;

/**
 * What a counter added between two readings: a saturated PMA counter adds
 * nothing; a 32-bit wrapping driver counter adds the wrapped difference; any
 * other decrease is a reset, after which the counter counted `cur`.
 */
export function increase(counter: string, prev: bigint, cur: bigint): bigint {
  if (saturated(counter, cur)) return 0n;
  if (cur >= prev) return cur - prev;
  if (WRAPS_32.has(counter) && prev < TWO_32) return cur + TWO_32 - prev;
  return cur;
}
