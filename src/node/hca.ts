/**
 * HCA inventory and counters from sysfs (`class/infiniband/<dev>/`), and the
 * uverbs → HCA map (`class/infiniband_verbs/uverbsN/ibdev`). A counter that is
 * missing, unreadable or reads `N/A (no PMA)` is absent, never 0.
 */
import type { Problems } from './problems.js';
import { join, listDir, listSubdirs, parseCounter, readSmall } from './roots.js';

export interface PortReading {
  readonly port: string;
  readonly state?: string;
  readonly physState?: string;
  readonly rate?: string;
  readonly linkLayer?: string;
  /** counters/ and hw_counters/ by file name, exact. */
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
}

// hw_counters entries that are settings, not counts.
const NOT_COUNTERS = new Set(['lifespan']);

export function readHcas(sysfs: string, problems: Problems): HcaScan {
  const classDir = join(sysfs, 'class', 'infiniband');
  const devices = listDir(classDir);
  if (!devices.ok) {
    if (devices.kind !== 'gone') problems.add('sysfs', devices.kind, devices.detail);
    return { present: false, hcas: [] };
  }
  const hcas: HcaReading[] = [];
  for (const device of devices.value.sort()) {
    const dir = join(classDir, device);
    const ports = listSubdirs(join(dir, 'ports'));
    if (!ports.ok) {
      if (ports.kind !== 'gone') problems.add('sysfs', ports.kind, ports.detail);
      continue;
    }
    hcas.push({
      device,
      boardId: attr(dir, 'board_id', problems),
      firmware: attr(dir, 'fw_ver', problems),
      hcaType: attr(dir, 'hca_type', problems),
      nodeGuid: attr(dir, 'node_guid', problems),
      ports: ports.value.sort((a, b) => Number(a) - Number(b)).map((p) => readPort(join(dir, 'ports', p), p, problems)),
    });
  }
  return { present: true, hcas };
}

function readPort(dir: string, port: string, problems: Problems): PortReading {
  const counters = new Map<string, bigint>();
  readCounterDir(join(dir, 'counters'), '', counters, problems);
  // Kernels before 4.5 keep the 64-bit data counters apart; they win over the 32-bit ones.
  readCounterDir(join(dir, 'counters_ext'), '_64', counters, problems);
  readCounterDir(join(dir, 'hw_counters'), '', counters, problems);
  return {
    port,
    state: attr(dir, 'state', problems),
    physState: attr(dir, 'phys_state', problems),
    rate: attr(dir, 'rate', problems),
    linkLayer: attr(dir, 'link_layer', problems),
    counters,
  };
}

function readCounterDir(dir: string, suffix: string, into: Map<string, bigint>, problems: Problems): void {
  const names = listDir(dir);
  if (!names.ok) {
    if (names.kind !== 'gone') problems.add('sysfs', names.kind, names.detail);
    return;
  }
  for (const file of names.value) {
    if (NOT_COUNTERS.has(file)) continue;
    const text = readSmall(join(dir, file));
    if (!text.ok) {
      // EINVAL/EOPNOTSUPP: the driver does not support this counter; it is absent.
      if (text.kind === 'denied') problems.add('sysfs', text.kind, text.detail);
      continue;
    }
    if (text.value.startsWith('N/A')) continue;
    const v = parseCounter(text.value);
    if (!v.ok) {
      problems.add('sysfs', 'malformed', `${join(dir, file)}: ${v.detail}`);
      continue;
    }
    const name = suffix && file.endsWith(suffix) ? file.slice(0, -suffix.length) : file;
    into.set(name, v.value);
  }
}

function attr(dir: string, name: string, problems: Problems): string | undefined {
  const r = readSmall(join(dir, name));
  if (r.ok) return r.value.trim();
  if (r.kind !== 'gone') problems.add('sysfs', r.kind, r.detail);
  return undefined;
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
  'rx_write_requests', 'rx_read_requests', 'rx_atomic_requests', 'rx_dct_connect', 'out_of_buffer',
  'out_of_sequence', 'duplicate_request', 'rnr_nak_retry_err', 'packet_seq_err', 'implied_nak_seq_err',
  'local_ack_timeout_err', 'resp_local_length_error', 'resp_cqe_error', 'req_cqe_error',
  'req_remote_invalid_request', 'req_remote_access_errors', 'resp_remote_access_errors',
  'resp_cqe_flush_error', 'req_cqe_flush_error', 'req_transport_retries_exceeded', 'req_rnr_retries_exceeded',
]);

export function saturated(counter: string, value: bigint): boolean {
  const w = PMA_WIDTH[counter];
  return w !== undefined && value >= (1n << BigInt(w)) - 1n;
}
