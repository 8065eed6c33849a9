/**
 * The rdma tool's JSON (`rdma -j statistic qp show|mode`, `rdma -j resource
 * show qp`), read within bounds whatever it holds: at most MAX_READING_BYTES
 * (too_large beyond), scanned in linear time (src/json/entries.ts), at most
 * MAX_COUNTERS counter entries and MAX_QP_GROUPS (link, PID) groups of QPs,
 * counter names from the kernel's Q group plus at most MAX_OTHER_NAMES others
 * (the first seen, for the process's life), and only the links of the node's
 * HCAs (from sysfs) when those are given. What is left out is counted by
 * reason; invalid JSON is malformed. The readers are fed the tool's output
 * chunk by chunk as the runner hands it over (QpStreamReader), so a reading
 * costs what is kept of it plus one chunk, never a copy of the output.
 *
 * Only the tool's JSON is parsed: its text output changed layout in iproute2 6.7.
 */
import { entryStream, type JsonEntry, type JsonField } from '../../json/entries.js';
import { JsonStreamError, type Held, type JsonStream } from '../../json/stream.js';
import { failed, ok, type Failure, type Read } from '../read/result.js';

/** One counter of `rdma -j statistic qp show`: a PID's QPs on one port. */
export interface QpCounter {
  readonly device: string;
  readonly port: string;
  /** The counter's id on the port (`cntn`); ids are reused after a release. */
  readonly cntn: number;
  /** Absent for kernel QPs. */
  readonly pid?: number;
  /** Numbers of the QPs bound to the counter (`lqpn`). */
  readonly qpns: readonly number[];
  readonly values: ReadonlyMap<string, bigint>;
}

/** QPs of `rdma -j resource show qp`: one, or `qps` of one PID on one link. */
export interface QpResource {
  readonly device: string;
  readonly port: string;
  readonly pid?: number;
  /** How many QPs (1 when absent). */
  readonly qps?: number;
}

/** One link of `rdma -j statistic qp mode`. */
export interface LinkMode {
  readonly device: string;
  readonly port: string;
  /** The tool's words, e.g. `qp auto off`, `qp auto type,pid on optional-counters off`. */
  readonly mode: string;
}

/** One background reading: the counters, and the QPs when `resource show qp` answered. */
export interface QpReading {
  /** Increases with every new reading; a cycle that sees the same one adds nothing. */
  readonly seq: number;
  readonly counters: readonly QpCounter[];
  readonly qps?: readonly QpResource[];
}

/** Why part of a reading was left out. */
export type QpDropReason = 'entries' | 'counters' | 'devices' | 'qpns' | 'values';
export const QP_DROP_REASONS: readonly QpDropReason[] = ['entries', 'counters', 'devices', 'qpns', 'values'];
export type QpDropped = Readonly<Record<QpDropReason, number>>;

/** A 250k-QP node lists ~48 MB of QPs; more is refused whole (too_large). */
export const MAX_READING_BYTES = 64 << 20;
/** Counter entries kept per reading: a PID, QP type and link each; more are dropped. */
export const MAX_COUNTERS = 16_384;
/** (link, PID) groups of QPs kept per reading of `resource show qp`. */
export const MAX_QP_GROUPS = 16_384;
/** QP numbers kept per reading, all counters together (8 bytes each). */
export const MAX_QPNS = 1 << 20;
/** Counter names outside the Q group accepted, the first seen, for the process's life. */
export const MAX_OTHER_NAMES = 8;
// An entry of the tool has ~45 fields; the rest of a wider one is dropped.
const SHAPE = { maxFields: 96, maxArrayItems: 1 << 16 };

/** The per-QP counters of the kernel's Q group and mlx5's optional ones. */
export const Q_COUNTERS: ReadonlySet<string> = new Set(
  (
    'rx_write_requests rx_read_requests rx_atomic_requests rx_dct_connect out_of_buffer out_of_sequence ' +
    'duplicate_request rnr_nak_retry_err packet_seq_err implied_nak_seq_err local_ack_timeout_err ' +
    'resp_local_length_error resp_cqe_error req_cqe_error req_remote_invalid_request req_remote_access_errors ' +
    'resp_remote_access_errors resp_cqe_flush_error req_cqe_flush_error req_transport_retries_exceeded ' +
    'req_rnr_retries_exceeded roce_adp_retrans roce_adp_retrans_to roce_slow_restart roce_slow_restart_cnps ' +
    'roce_slow_restart_trans rp_cnp_ignored rp_cnp_handled np_ecn_marked_roce_packets np_cnp_sent ' +
    'rx_icrc_encapsulated rdma_tx_bytes rdma_rx_bytes rdma_tx_packets rdma_rx_packets'
  ).split(' '),
);

/** Which counter names are kept: the Q group, and the first MAX_OTHER_NAMES others ever seen. */
export class CounterNames {
  private readonly others = new Set<string>();

  accept(name: string): boolean {
    if (Q_COUNTERS.has(name) || this.others.has(name)) return true;
    if (this.others.size >= MAX_OTHER_NAMES) return false;
    this.others.add(name);
    return true;
  }
}

export interface QpLimits {
  readonly names: CounterNames;
  /** The node's HCA links (`device/port`, from sysfs); absent: any. */
  readonly links?: ReadonlySet<string>;
}

export interface Parsed<T> {
  readonly items: T[];
  readonly dropped: QpDropped;
  /** The first counter value left out as malformed (`name=value`, cut short), for the log. */
  readonly malformed?: string;
}

// The fields of a `resource show qp` entry that are read: the rest is skipped unbuilt.
const RESOURCE_KEYS: ReadonlySet<string> = new Set(['ifname', 'port', 'pid']);

// Fields of a counter entry that are not counters.
const NOT_COUNTERS = new Set(['ifindex', 'ifname', 'port', 'cntn', 'qp-type', 'pid', 'comm', 'lqpn', 'mode']);

type Fields = ReadonlyMap<string, JsonField>;

const text = (f: JsonField | undefined): string | undefined => (f?.kind === 'string' ? f.text : undefined);

function integer(f: JsonField | undefined): number | undefined {
  if (f?.kind !== 'number' || !/^\d{1,15}$/.test(f.raw)) return undefined;
  return Number(f.raw);
}

function link(e: Fields): { device: string; port: string } | undefined {
  const device = text(e.get('ifname'));
  const p = e.get('port');
  const port = p?.kind === 'number' ? p.raw : text(p);
  return device === undefined || port === undefined ? undefined : { device, port };
}

function pidOf(e: Fields): { pid?: number } {
  const pid = integer(e.get('pid'));
  return pid !== undefined && pid > 0 ? { pid } : {};
}

/** The kernel's QP counters are 64 bits wide: a value above this is no counter's. */
const MAX_COUNTER_VALUE = (1n << 64n) - 1n;
/** How much of a malformed value the log shows. */
const MALFORMED_SHOWN = 40;

/**
 * A counter's value; undefined for a field that is no number (text the tool adds); 'malformed' for
 * a number no 64-bit counter holds (negative, fractional, an exponent, above 2^64-1).
 */
function counterValue(f: JsonField): bigint | 'malformed' | undefined {
  const raw = f.kind === 'number' ? f.raw : f.kind === 'string' && /^\d+$/.test(f.text) ? f.text : undefined;
  if (raw === undefined) return undefined;
  if (!/^\d{1,20}$/.test(raw)) return 'malformed';
  const value = BigInt(raw);
  return value <= MAX_COUNTER_VALUE ? value : 'malformed';
}

/** Counts what is dropped while a reading is scanned, and keeps the first malformed value. */
class Drops {
  readonly counts: Record<QpDropReason, number> = { entries: 0, counters: 0, devices: 0, qpns: 0, values: 0 };
  malformed: string | undefined;
  add(reason: QpDropReason, n = 1): void {
    this.counts[reason] += n;
  }
  /** A counter value left out: the counter is absent from this reading, the rest of its entry kept. */
  badValue(name: string, f: JsonField): void {
    this.add('values');
    const raw = f.kind === 'number' ? f.raw : f.kind === 'string' ? f.text : '';
    this.malformed ??= `${name}=${raw.slice(0, MALFORMED_SHOWN)}`;
  }
  result<T>(items: T[]): Parsed<T> {
    return this.malformed === undefined
      ? { items, dropped: this.counts }
      : { items, dropped: this.counts, malformed: this.malformed };
  }
}

/** A reader fed the tool's output as it arrives; what it keeps is bounded whatever it is fed. */
export interface QpStreamReader<T> {
  /** The next piece of output (bytes: UTF-8, split anywhere); ignored after a failure. */
  push(chunk: Buffer | string): void;
  /** The output ended: the reading, or why it is refused. */
  end(): Read<Parsed<T>>;
  /** Debug: what the scanner holds between chunks (the memory tests count it). */
  readonly held: Held;
}

/**
 * Scans a JSON array of objects as it is fed: `visit` gets each kept object as soon as it ends;
 * `keep` says before each element whether it may be kept at all; `result` builds the reading.
 */
class ArrayReader<T> implements QpStreamReader<T> {
  private readonly stream: JsonStream;
  private size = 0;
  private failure: Failure | undefined;

  constructor(
    keep: () => boolean,
    visit: (fields: Fields, entry: JsonEntry) => void,
    private readonly result: () => Parsed<T>,
    keys?: ReadonlySet<string>,
  ) {
    const shape = keys ? { ...SHAPE, keys } : SHAPE;
    this.stream = entryStream({ shape, keep, onEntry: (e) => e.fields && visit(e.fields, e) });
  }

  get held(): Held {
    return this.stream.held;
  }

  push(chunk: Buffer | string): void {
    if (this.failure) return;
    this.size += chunk.length;
    if (this.size > MAX_READING_BYTES) {
      this.failure = failed('too_large', `reading over ${MAX_READING_BYTES} bytes`);
      return;
    }
    this.scan(() => this.stream.push(chunk));
  }

  end(): Read<Parsed<T>> {
    this.scan(() => this.stream.end());
    return this.failure ?? ok(this.result());
  }

  private scan(step: () => void): void {
    if (this.failure) return;
    try {
      step();
    } catch (err) {
      if (!(err instanceof JsonStreamError)) throw err;
      this.failure = failed('malformed', `not a JSON array: ${err.message}`);
    }
  }
}

/** Whether the entry's link is one of the node's; counts it dropped when not. */
function knownLink(where: { device: string; port: string }, limits: QpLimits, drops: Drops): boolean {
  if (limits.links === undefined || limits.links.has(`${where.device}/${where.port}`)) return true;
  drops.add('devices');
  return false;
}

/** `rdma -j statistic qp show`; entries without an interface, port or id are skipped. */
export function counterReader(limits: QpLimits): QpStreamReader<QpCounter> {
  const items: QpCounter[] = [];
  const drops = new Drops();
  let qpnsLeft = MAX_QPNS;
  const keep = (): boolean => {
    if (items.length < MAX_COUNTERS) return true;
    drops.add('entries');
    return false;
  };
  const visit = (e: Fields, entry: JsonEntry): void => {
    const where = link(e);
    const cntn = integer(e.get('cntn'));
    if (!where || cntn === undefined || !knownLink(where, limits, drops)) return;
    const values = new Map<string, bigint>();
    for (const [name, f] of e) {
      if (NOT_COUNTERS.has(name)) continue;
      const value = counterValue(f);
      if (value === undefined) continue;
      if (value === 'malformed') drops.badValue(name, f);
      else if (limits.names.accept(name)) values.set(name, value);
      else drops.add('counters');
    }
    drops.add('counters', entry.extraFields);
    const lqpn = e.get('lqpn');
    const all = lqpn?.kind === 'numbers' ? lqpn.list : [];
    const qpns = all.length <= qpnsLeft ? all : all.slice(0, qpnsLeft);
    qpnsLeft -= qpns.length;
    drops.add('qpns', (lqpn?.kind === 'numbers' ? lqpn.length : 0) - qpns.length);
    items.push({ ...where, cntn, ...pidOf(e), qpns, values });
  };
  return new ArrayReader(keep, visit, () => drops.result(items));
}

/** `rdma -j resource show qp`, counted per (link, PID); QPs without a port (not yet in INIT) are skipped. */
export function resourceReader(limits: QpLimits): QpStreamReader<QpResource> {
  const groups = new Map<string, { device: string; port: string; pid?: number; qps: number }>();
  const drops = new Drops();
  const visit = (e: Fields): void => {
    const where = link(e);
    if (!where || !knownLink(where, limits, drops)) return;
    const pid = pidOf(e);
    const key = `${where.device} ${where.port} ${pid.pid ?? ''}`;
    const g = groups.get(key);
    if (g) g.qps++;
    else if (groups.size < MAX_QP_GROUPS) groups.set(key, { ...where, ...pid, qps: 1 });
    else drops.add('entries');
  };
  const result = (): Parsed<QpResource> => ({ items: [...groups.values()], dropped: drops.counts });
  return new ArrayReader(() => true, visit, result, RESOURCE_KEYS);
}

/** `rdma -j statistic qp mode`. */
export function linkModeReader(limits: QpLimits): QpStreamReader<LinkMode> {
  const items: LinkMode[] = [];
  const drops = new Drops();
  const keep = (): boolean => {
    if (items.length < MAX_COUNTERS) return true;
    drops.add('entries');
    return false;
  };
  const visit = (e: Fields): void => {
    const where = link(e);
    const mode = text(e.get('mode'));
    if (where && mode !== undefined && knownLink(where, limits, drops)) items.push({ ...where, mode });
  };
  return new ArrayReader(keep, visit, () => ({ items, dropped: drops.counts }));
}

/** Auto mode off: the only links the agent may turn on. */
export function autoOff(mode: string): boolean {
  return /^qp auto off\b/.test(mode.trim());
}
