/**
 * HCA inventory and counters from sysfs (`class/infiniband/<dev>/`), and the
 * uverbs → HCA map (`class/infiniband_verbs/uverbsN/ibdev`). A counter that is
 * missing, unreadable or reads `N/A (no PMA)` is absent, never 0.
 */
import type { Problems } from './problems.js';
import { DEV_RE, join, listDir, listSubdirs, parseCounter, readSmall, type Failure } from './roots.js';

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

export function readHcas(sysfs: string, problems: Problems): HcaScan {
  const classDir = join(sysfs, 'class', 'infiniband');
  const devices = listDir(classDir);
  if (!devices.ok) {
    if (devices.kind === 'gone') return { present: false, hcas: [] };
    problems.add('sysfs', devices.kind, devices.detail);
    return { present: true, hcas: [], failure: `cannot list ${classDir}: ${devices.detail}` };
  }
  const ctx = new ScanContext(problems);
  const hcas: HcaReading[] = [];
  for (const device of devices.value.sort()) {
    const hca = readHca(join(classDir, device), device, ctx);
    if (hca) hcas.push(hca);
  }
  return ctx.failure === undefined ? { present: true, hcas } : { present: true, hcas, failure: ctx.failure };
}

function readHca(dir: string, device: string, ctx: ScanContext): HcaReading | undefined {
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
    device,
    boardId: attr(dir, 'board_id', ctx),
    firmware: attr(dir, 'fw_ver', ctx),
    hcaType: attr(dir, 'hca_type', ctx),
    nodeGuid: attr(dir, 'node_guid', ctx),
    ports: ports.sort((a, b) => Number(a) - Number(b)).map((p) => readPort(join(dir, 'ports', p), p, ctx)),
  };
}

function readPort(dir: string, port: string, ctx: ScanContext): PortReading {
  const counters = new Map<string, bigint>();
  readCounterDir(join(dir, 'counters'), counters, ctx);
  readCounterDir(join(dir, 'hw_counters'), counters, ctx);
  // Kernels before 4.5 (mlx4) keep separate 64-bit counters here (port_rcv_data_64, ...):
  // exported under their own names, they never replace a counters/ value.
  readCounterDir(join(dir, 'counters_ext'), counters, ctx);
  const state = attr(dir, 'state', ctx);
  const physState = attr(dir, 'phys_state', ctx);
  const rate = attr(dir, 'rate', ctx);
  return {
    port,
    state,
    stateId: parsed(state, parseStateId, join(dir, 'state'), ctx),
    physState,
    physStateId: parsed(physState, parseStateId, join(dir, 'phys_state'), ctx),
    rate,
    rateBytesPerSecond: parsed(rate, parseRate, join(dir, 'rate'), ctx),
    linkLayer: attr(dir, 'link_layer', ctx),
    counters,
  };
}

function readCounterDir(dir: string, into: Map<string, bigint>, ctx: ScanContext): void {
  const names = listDir(dir);
  if (!names.ok) return ctx.note(names);
  for (const file of names.value) {
    if (NOT_COUNTERS.has(file) || into.has(file)) continue;
    const text = readSmall(join(dir, file));
    if (!text.ok) {
      if (text.code === undefined || !UNSUPPORTED.has(text.code)) ctx.note(text);
      continue;
    }
    if (text.value.startsWith('N/A')) continue;
    const v = parseCounter(text.value);
    if (!v.ok) {
      ctx.problems.add('sysfs', 'malformed', `${join(dir, file)}: ${v.detail}`);
      continue;
    }
    into.set(file, v.value);
  }
}

function attr(dir: string, name: string, ctx: ScanContext): string | undefined {
  const r = readSmall(join(dir, name), { utf8: true });
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

/**
 * Device number → uverbs device, from `class/infiniband_verbs/uverbsN/dev` ("231:192"): what an
 * fd's stat is matched against. No class directory (no HCA) is an empty map.
 */
export function verbsByDevice(sysfs: string, problems: Problems): Map<string, string> {
  const dir = join(sysfs, 'class', 'infiniband_verbs');
  const out = new Map<string, string>();
  const names = listDir(dir);
  if (!names.ok) {
    if (names.kind !== 'gone') problems.add('sysfs', names.kind, names.detail);
    return out;
  }
  for (const name of names.value) {
    if (!UVERBS_NAME_RE.test(name)) continue;
    const r = readSmall(join(dir, name, 'dev'));
    if (!r.ok) {
      if (r.kind !== 'gone') problems.add('sysfs', r.kind, r.detail);
      continue;
    }
    const dev = r.value.trim();
    if (DEV_RE.test(dev)) out.set(dev, name);
    else problems.add('sysfs', 'malformed', `${join(dir, name, 'dev')}: ${JSON.stringify(dev.slice(0, 40))}`);
  }
  return out;
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
    const r = readSmall(join(this.sysfs, 'class', 'infiniband_verbs', uverbs, 'ibdev'));
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
