/**
 * The rdma tool's JSON (`rdma -j statistic qp show|mode`, `rdma -j resource
 * show qp`), read within bounds whatever it holds: at most MAX_READING_BYTES
 * (too_large beyond), scanned in linear time (json-scan.ts), at most
 * MAX_COUNTERS counter entries and MAX_QP_GROUPS (link, PID) groups of QPs,
 * counter names from the kernel's Q group plus at most MAX_OTHER_NAMES others
 * (the first seen, for the process's life), and only the links of the node's
 * HCAs (from sysfs) when those are given. What is left out is counted by
 * reason; invalid JSON is malformed. The async readers pause every
 * PAUSE_CHARS so that a long reading does not hold the event loop.
 *
 * Only the tool's JSON is parsed: its text output changed layout in iproute2 6.7.
 */
import { END, JsonArrayScanner, JsonSyntaxError, type JsonEntry, type JsonField } from './json-scan.js';
import { failed, ok, type Failure, type Read } from './roots.js';

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
export type QpDropReason = 'entries' | 'counters' | 'devices' | 'qpns';
export const QP_DROP_REASONS: readonly QpDropReason[] = ['entries', 'counters', 'devices', 'qpns'];
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
/** Characters scanned between two pauses of the async readers. */
const PAUSE_CHARS = 1 << 18;
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

function counterValue(f: JsonField): bigint | undefined {
  const raw = f.kind === 'number' ? f.raw : f.kind === 'string' ? f.text : undefined;
  return raw !== undefined && /^\d{1,20}$/.test(raw) ? BigInt(raw) : undefined;
}

/** Counts what is dropped while a reading is scanned. */
class Drops {
  readonly counts: Record<QpDropReason, number> = { entries: 0, counters: 0, devices: 0, qpns: 0 };
  add(reason: QpDropReason, n = 1): void {
    this.counts[reason] += n;
  }
}

/**
 * Scans a JSON array of objects: `visit` gets each kept object (false from it drops the
 * element); `keep` says before each element whether it may be kept at all. Yields now and
 * then (the async readers pause there).
 */
function* scan(
  json: string,
  keep: () => boolean,
  visit: (fields: Fields, entry: JsonEntry) => void,
  keys?: ReadonlySet<string>,
): Generator<void, Failure | undefined> {
  if (json.length > MAX_READING_BYTES) return failed('too_large', `reading over ${MAX_READING_BYTES} bytes`);
  try {
    const scanner = new JsonArrayScanner(json, keys ? { ...SHAPE, keys } : SHAPE);
    let mark = 0;
    for (;;) {
      const entry = scanner.next(keep);
      if (entry === END) return undefined;
      if (entry.fields) visit(entry.fields, entry);
      if (scanner.offset - mark >= PAUSE_CHARS) {
        mark = scanner.offset;
        yield;
      }
    }
  } catch (err) {
    if (err instanceof JsonSyntaxError) return failed('malformed', `not a JSON array: ${err.message}`);
    throw err;
  }
}

/** Whether the entry's link is one of the node's; counts it dropped when not. */
function knownLink(where: { device: string; port: string }, limits: QpLimits, drops: Drops): boolean {
  if (limits.links === undefined || limits.links.has(`${where.device}/${where.port}`)) return true;
  drops.add('devices');
  return false;
}

/** `rdma -j statistic qp show`; entries without an interface, port or id are skipped. */
export function* counterEntries(json: string, limits: QpLimits): Generator<void, Read<Parsed<QpCounter>>> {
  const items: QpCounter[] = [];
  const drops = new Drops();
  let qpnsLeft = MAX_QPNS;
  const keep = (): boolean => {
    if (items.length < MAX_COUNTERS) return true;
    drops.add('entries');
    return false;
  };
  const failure = yield* scan(json, keep, (e, entry) => {
    const where = link(e);
    const cntn = integer(e.get('cntn'));
    if (!where || cntn === undefined || !knownLink(where, limits, drops)) return;
    const values = new Map<string, bigint>();
    for (const [name, f] of e) {
      if (NOT_COUNTERS.has(name)) continue;
      const value = counterValue(f);
      if (value === undefined) continue;
      if (limits.names.accept(name)) values.set(name, value);
      else drops.add('counters');
    }
    drops.add('counters', entry.extraFields);
    const lqpn = e.get('lqpn');
    const all = lqpn?.kind === 'numbers' ? lqpn.list : [];
    const qpns = all.length <= qpnsLeft ? all : all.slice(0, qpnsLeft);
    qpnsLeft -= qpns.length;
    drops.add('qpns', (lqpn?.kind === 'numbers' ? lqpn.length : 0) - qpns.length);
    items.push({ ...where, cntn, ...pidOf(e), qpns, values });
  });
  return failure ?? ok({ items, dropped: drops.counts });
}

/** `rdma -j resource show qp`, counted per (link, PID); QPs without a port (not yet in INIT) are skipped. */
export function* resourceEntries(json: string, limits: QpLimits): Generator<void, Read<Parsed<QpResource>>> {
  const groups = new Map<string, { device: string; port: string; pid?: number; qps: number }>();
  const drops = new Drops();
  const failure = yield* scan(
    json,
    () => true,
    (e) => {
      const where = link(e);
      if (!where || !knownLink(where, limits, drops)) return;
      const pid = pidOf(e);
      const key = `${where.device} ${where.port} ${pid.pid ?? ''}`;
      const g = groups.get(key);
      if (g) g.qps++;
      else if (groups.size < MAX_QP_GROUPS) groups.set(key, { ...where, ...pid, qps: 1 });
      else drops.add('entries');
    },
    RESOURCE_KEYS,
  );
  return failure ?? ok({ items: [...groups.values()], dropped: drops.counts });
}

/** `rdma -j statistic qp mode`. */
export function* linkModeEntries(json: string, limits: QpLimits): Generator<void, Read<Parsed<LinkMode>>> {
  const items: LinkMode[] = [];
  const drops = new Drops();
  const keep = (): boolean => {
    if (items.length < MAX_COUNTERS) return true;
    drops.add('entries');
    return false;
  };
  const failure = yield* scan(json, keep, (e) => {
    const where = link(e);
    const mode = text(e.get('mode'));
    if (where && mode !== undefined && knownLink(where, limits, drops)) items.push({ ...where, mode });
  });
  return failure ?? ok({ items, dropped: drops.counts });
}

/** Runs a reader to its end at once. */
export function drain<T>(g: Generator<void, T>): T {
  for (;;) {
    const r = g.next();
    if (r.done) return r.value;
  }
}

/** Runs a reader, letting the event loop run at each of its pauses. */
export async function drainAsync<T>(g: Generator<void, T>): Promise<T> {
  for (;;) {
    const r = g.next();
    if (r.done) return r.value;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

const items = <T>(r: Read<Parsed<T>>): Read<T[]> => (r.ok ? ok(r.value.items) : r);

/** The counters of a reading, without the node's links or dropped counts (tests, demo). */
export function parseQpCounters(json: string): Read<QpCounter[]> {
  return items(drain(counterEntries(json, { names: new CounterNames() })));
}

export function parseQpResources(json: string): Read<QpResource[]> {
  return items(drain(resourceEntries(json, { names: new CounterNames() })));
}

export function parseLinkModes(json: string): Read<LinkMode[]> {
  return items(drain(linkModeEntries(json, { names: new CounterNames() })));
}

/** Auto mode off: the only links the agent may turn on. */
export function autoOff(mode: string): boolean {
  return /^qp auto off\b/.test(mode.trim());
}
