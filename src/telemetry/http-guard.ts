/**
 * Who gets a connection slot on the agents' HTTP endpoints when there are not enough for everyone.
 *
 * A connection is *unfinished* while it has no request in progress: it has not sent complete
 * headers yet (or, over TLS, not finished its handshake), or it is an idle keep-alive connection
 * between two requests. Slowloris lives there: connections that never finish their headers, each
 * reopened as soon as it is closed. Refusing newcomers when the slots are full hands every slot to
 * whoever reopens fastest, the attacker; so here a newcomer is always admitted while an
 * unfinished connection can make room for it:
 *
 * - an address that already holds `maxUnfinishedPerAddress` unfinished connections older than
 *   LINGER_MS (or `maxConnectionsPerAddress` connections in all) loses its own oldest unfinished one;
 * - when unfinished connections older than LINGER_MS reach `maxUnfinished`, or all connections
 *   `maxConnections`, the address holding the most unfinished connections loses its oldest one;
 * - only when every slot (or every slot of the newcomer's address) has a request in progress is
 *   the newcomer refused: requests in progress are never cut for a newcomer.
 *
 * The unfinished budgets count only connections that linger: a burst of fresh connections that
 * are about to send their requests (a browser, a test) is not cut; the hard caps hold anyway.
 *
 * A scraper sends its request as soon as it is connected, so it is no longer unfinished long
 * before the attack's reopened connections reach it, whether it shares the attacker's address or
 * not. Addresses are compared as sources: IPv4 whole, IPv6 by /64 (what one host usually holds).
 */
import type { Socket } from 'node:net';

export interface ConnectionLimits {
  /** Open connections per endpoint. */
  readonly maxConnections: number;
  /** Connections with no request in progress, per endpoint. */
  readonly maxUnfinished: number;
  /** Open connections per source address. */
  readonly maxConnectionsPerAddress: number;
  /** Connections with no request in progress per source address. */
  readonly maxUnfinishedPerAddress: number;
}

/** Why an endpoint closed a connection itself (the `reason` of slurm_otel_http_connections_closed). */
export const CONNECTION_CLOSE_REASONS = [
  'refused',
  'refused_address',
  'evicted',
  'evicted_address',
  'timeout',
  'handshake_timeout',
] as const;
export type ConnectionCloseReason = (typeof CONNECTION_CLOSE_REASONS)[number];

/** Why a basic-auth check was answered 429 (the `reason` of slurm_otel_http_auth_throttled). */
export const AUTH_THROTTLE_REASONS = ['failures', 'address_queue', 'queue_full', 'displaced'] as const;
export type AuthThrottleReason = (typeof AUTH_THROTTLE_REASONS)[number];

export type GuardFamily = 'connections' | 'auth';

/** What an endpoint refused or cut, per endpoint and reason: read by self-monitoring. */
export class GuardCounts {
  private readonly counts = new Map<string, number>();

  /** Makes the endpoint's series exist at 0 before their first event. */
  register(endpoint: string): void {
    for (const reason of CONNECTION_CLOSE_REASONS) this.bump('connections', endpoint, reason, 0);
    for (const reason of AUTH_THROTTLE_REASONS) this.bump('auth', endpoint, reason, 0);
  }

  add(family: 'connections', endpoint: string, reason: ConnectionCloseReason): void;
  add(family: 'auth', endpoint: string, reason: AuthThrottleReason): void;
  add(family: GuardFamily, endpoint: string, reason: string): void {
    this.bump(family, endpoint, reason, 1);
  }

  get(family: GuardFamily, endpoint: string, reason: string): number {
    return this.counts.get(key(family, endpoint, reason)) ?? 0;
  }

  entries(): Array<{ family: GuardFamily; endpoint: string; reason: string; value: number }> {
    return [...this.counts].map(([k, value]) => {
      const [family, endpoint, reason] = k.split('\0') as [GuardFamily, string, string];
      return { family, endpoint, reason, value };
    });
  }

  private bump(family: GuardFamily, endpoint: string, reason: string, by: number): void {
    const k = key(family, endpoint, reason);
    this.counts.set(k, (this.counts.get(k) ?? 0) + by);
  }
}

function key(family: GuardFamily, endpoint: string, reason: string): string {
  return `${family}\0${endpoint}\0${reason}`;
}

/**
 * The source a peer address stands for: IPv4 (IPv4-mapped IPv6 included) whole, IPv6 by its /64
 * prefix, since one host commonly holds a whole /64 and could rotate through it.
 */
export function sourceOf(address: string | undefined): string {
  if (address === undefined) return '';
  const bare = address.split('%')[0] as string;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  if (mapped) return mapped[1] as string;
  if (!bare.includes(':')) return bare;
  return `${ipv6Groups(bare).slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, `::` expanded (an embedded dotted IPv4 counts as two). */
function ipv6Groups(address: string): string[] {
  const split = (part: string): string[] =>
    part === '' ? [] : part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g]));
  const [head = '', tail] = address.split('::');
  const h = split(head);
  if (tail === undefined) return h.map(normalGroup);
  const t = split(tail);
  const zeros = Array.from({ length: Math.max(0, 8 - h.length - t.length) }, () => '0');
  return [...h, ...zeros, ...t].map(normalGroup);
}

function normalGroup(g: string): string {
  const n = parseInt(g, 16);
  return Number.isNaN(n) ? g.toLowerCase() : n.toString(16);
}

interface Tracked {
  /** The connection as accepted (over TLS, the raw socket under the TLS one). */
  readonly socket: Socket;
  readonly source: string;
  /** Requests in progress (0: unfinished). */
  busy: number;
  /** When it last became unfinished, as an order (a sequence number: ties are impossible). */
  since: number;
  /** When it last became unfinished (ms, monotonic). */
  unfinishedAtMs: number;
}

/** How long an unfinished connection may be young (see ConnectionGuard.lingering). */
export const LINGER_MS = 1_000;

/**
 * Tracks an endpoint's connections and decides, as each arrives, which one is closed when there
 * are not enough slots (see the module's comment). `closed` is told every connection it closes.
 */
export class ConnectionGuard {
  /** By peer (address and port): the same key from the raw socket and from the TLS one over it. */
  private readonly conns = new Map<string, Tracked>();
  private order = 0;

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly closed: (reason: ConnectionCloseReason, source: string) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** A new connection: admitted, making room by closing unfinished ones if needed, or closed. */
  admit(socket: Socket): void {
    const peer = peerOf(socket);
    if (peer === undefined) return void socket.destroy();
    const source = sourceOf(socket.remoteAddress);
    if (!this.roomForAddress(source) || !this.roomOverall(source)) return void socket.destroy();
    this.conns.set(peer, { socket, source, busy: 0, since: this.order++, unfinishedAtMs: this.now() });
    socket.once('close', () => this.conns.delete(peer));
  }

  /** A request arrived on the connection (`socket`: the raw one or the TLS one over it). */
  started(socket: Socket): void {
    const t = this.find(socket);
    if (t) t.busy++;
  }

  /** The request's response is over (sent or abandoned). */
  ended(socket: Socket): void {
    const t = this.find(socket);
    if (t === undefined || t.busy === 0) return;
    if (--t.busy > 0) return;
    t.since = this.order++;
    t.unfinishedAtMs = this.now();
  }

  /** Whether a request is in progress on the connection (false when unknown). */
  isBusy(socket: Socket): boolean {
    return (this.find(socket)?.busy ?? 0) > 0;
  }

  /** Closes every connection, unfinished ones and TLS handshakes in progress included (a stop). */
  closeAll(): void {
    for (const t of this.conns.values()) t.socket.destroy();
    this.conns.clear();
  }

  size(): number {
    return this.conns.size;
  }

  private find(socket: Socket): Tracked | undefined {
    const peer = peerOf(socket);
    return peer === undefined ? undefined : this.conns.get(peer);
  }

  private roomForAddress(source: string): boolean {
    const mine = [...this.conns.values()].filter((t) => t.source === source);
    const unfinished = mine.filter((t) => t.busy === 0);
    const l = this.limits;
    if (mine.length >= l.maxConnectionsPerAddress) return this.makeRoom(unfinished, source, 'evicted_address');
    if (unfinished.length < l.maxUnfinishedPerAddress) return true;
    return this.makeRoom(this.lingering(unfinished), source, 'evicted_address', true);
  }

  private roomOverall(source: string): boolean {
    const unfinished = [...this.conns.values()].filter((t) => t.busy === 0);
    const l = this.limits;
    if (this.conns.size >= l.maxConnections) return this.makeRoom(mostHeld(unfinished), source, 'evicted');
    if (unfinished.length < l.maxUnfinished) return true;
    return this.makeRoom(mostHeld(this.lingering(unfinished)), source, 'evicted', true);
  }

  /**
   * Closes the oldest of `candidates` for the newcomer. With none: under a soft limit (the
   * unfinished budgets) the newcomer is admitted all the same, since what holds the budget is
   * young and about to send its request; under a hard one it is refused.
   */
  private makeRoom(
    candidates: readonly Tracked[],
    source: string,
    reason: 'evicted' | 'evicted_address',
    soft = false,
  ): boolean {
    const victim = oldest(candidates);
    if (victim !== undefined) {
      this.evict(victim, reason);
      return true;
    }
    if (soft) return true;
    this.closed(reason === 'evicted' ? 'refused' : 'refused_address', source);
    return false;
  }

  /**
   * Unfinished connections older than LINGER_MS: a client sends its request within a few round
   * trips of connecting, so a burst of fresh connections (a browser, a test) is left alone and
   * only those that linger, as slowloris's do, count against the unfinished budgets.
   */
  private lingering(ts: readonly Tracked[]): Tracked[] {
    const now = this.now();
    return ts.filter((t) => now - t.unfinishedAtMs >= LINGER_MS);
  }

  private evict(t: Tracked, reason: ConnectionCloseReason): void {
    const peer = peerOf(t.socket);
    if (peer !== undefined) this.conns.delete(peer);
    t.socket.destroy();
    this.closed(reason, t.source);
  }
}

function peerOf(socket: Socket): string | undefined {
  const { remoteAddress, remotePort } = socket;
  return remoteAddress === undefined || remotePort === undefined ? undefined : `${remoteAddress}|${remotePort}`;
}

function oldest(ts: readonly Tracked[]): Tracked | undefined {
  let best: Tracked | undefined;
  for (const t of ts) if (best === undefined || t.since < best.since) best = t;
  return best;
}

/** The connections of the source holding the most of `ts` (ties: the one holding the oldest). */
function mostHeld(ts: readonly Tracked[]): Tracked[] {
  const bySource = new Map<string, Tracked[]>();
  for (const t of ts) bySource.set(t.source, [...(bySource.get(t.source) ?? []), t]);
  let best: Tracked[] = [];
  for (const group of bySource.values()) {
    const older = (oldest(group)?.since ?? Infinity) < (oldest(best)?.since ?? Infinity);
    if (group.length > best.length || (group.length === best.length && older)) best = group;
  }
  return best;
}
