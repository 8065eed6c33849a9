/**
 * HTTP GET transport both API clients stand on: slurmrestd's (api/) and the Kubernetes API's
 * (kubernetes/). It knows neither: its errors say what happened on the wire, and each client
 * decides what an HTTP status means for it.
 *
 * Why not fetch(): undici cannot talk to a unix socket without a custom dispatcher, its body
 * timeout is per chunk (a server trickling one byte a minute never times out) and it gives no
 * byte cap. Here one timer covers connect, headers and the whole body of an attempt, the body is
 * capped while it streams, and the body is handed to the caller as an AsyncIterable that is
 * consumed once, so list responses are decoded element by element and never held as one string.
 *
 * Retries: a request is retried (bounded attempts, exponential backoff with jitter) on network
 * errors, timeouts and 502/503/504, never on other statuses. The retry covers the caller's
 * handling of the body too: `request()` runs `handle(response)` inside the attempt, so a body
 * that stalls half way is fetched again from the start rather than half-decoded.
 *
 * Error messages name the method and URL path only: never headers, where the tokens live.
 */
import http from 'node:http';
import type { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import zlib from 'node:zlib';
import { lazyHttps } from '../../lazy-modules.js';

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_ATTEMPTS = 3;
export const DEFAULT_BASE_DELAY_MS = 500;
export const DEFAULT_MAX_DELAY_MS = 10_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 2 * 1024 ** 3;
/** How much of an error response is kept: enough for a client's own error document (Slurm's `errors[]`). */
export const ERROR_BODY_BYTES = 64 * 1024;

const RETRYABLE_STATUS: ReadonlySet<number> = new Set([502, 503, 504]);

/** Base of every transport failure; `retryable` says whether another attempt may help. */
export class TransportError extends Error {
  constructor(
    message: string,
    readonly path: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** The server answered with a status outside 2xx. `body` is the first ERROR_BODY_BYTES of it. */
export class HttpStatusError extends TransportError {
  override readonly name = 'HttpStatusError';
  constructor(
    path: string,
    readonly status: number,
    readonly body: string,
    readonly contentType: string | undefined,
  ) {
    super(`GET ${path}: HTTP ${status}`, path, RETRYABLE_STATUS.has(status));
  }
}

export type TimeoutPhase = 'connect' | 'headers' | 'body';

export class TimeoutError extends TransportError {
  override readonly name = 'TimeoutError';
  constructor(
    path: string,
    readonly timeoutMs: number,
    readonly phase: TimeoutPhase,
    bytesRead: number,
  ) {
    super(`GET ${path}: no complete response within ${timeoutMs} ms (${describePhase(phase, bytesRead)})`, path, true);
  }
}

function describePhase(phase: TimeoutPhase, bytes: number): string {
  if (phase === 'connect') return 'connection not established';
  if (phase === 'headers') return 'connected, no response headers';
  return `body stalled after ${bytes} bytes`;
}

export class TooLargeError extends TransportError {
  override readonly name = 'TooLargeError';
  constructor(
    path: string,
    readonly limitBytes: number,
  ) {
    super(`GET ${path}: response exceeds the ${limitBytes}-byte cap (maxResponseBytes)`, path, false);
  }
}

/** Certificate problems do not heal between attempts: not worth a retry. */
const TLS_VERIFY_CODE = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/;

export class NetworkError extends TransportError {
  override readonly name = 'NetworkError';
  constructor(
    path: string,
    readonly code: string | undefined,
    detail: string,
  ) {
    super(`GET ${path}: ${detail}`, path, code === undefined || !TLS_VERIFY_CODE.test(code));
  }
}

export class AbortedError extends TransportError {
  override readonly name = 'AbortedError';
  constructor(path: string) {
    super(`GET ${path}: aborted`, path, false);
  }
}

/** Where the server is: a TCP URL (with an optional path prefix) or a unix socket. */
export type ServerAddress =
  | {
      readonly kind: 'tcp';
      readonly protocol: 'http:' | 'https:';
      readonly host: string;
      readonly port: number;
      readonly basePath: string;
    }
  | { readonly kind: 'unix'; readonly socketPath: string };

/** `http(s)://host[:port][/prefix]` or `unix:/path/to/socket` (also `unix:///path`). */
export function parseServer(server: string): ServerAddress {
  const s = server.trim();
  if (s.startsWith('unix:')) {
    const socketPath = s.slice('unix:'.length).replace(/^\/\/(?=\/)/, '');
    if (!socketPath.startsWith('/'))
      throw new Error(`server "${server}": a unix socket needs an absolute path (unix:/run/slurmrestd.sock)`);
    return { kind: 'unix', socketPath };
  }
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    throw new Error(`server "${server}" is not a URL (expected http(s)://host:port or unix:/path)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`server "${server}": protocol ${url.protocol} is not http, https or unix`);
  if (url.username !== '' || url.password !== '') throw new Error('server URL must not carry credentials');
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return { kind: 'tcp', protocol: url.protocol, host, port, basePath: url.pathname.replace(/\/+$/, '') };
}

export interface TlsOptions {
  /** PEM CA bundle to trust instead of the system store. */
  readonly ca?: string | Buffer;
  /** PEM client certificate and key (Kubernetes kubeconfig users). */
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
  /** false skips certificate verification (explicit opt-in only). */
  readonly rejectUnauthorized?: boolean;
  readonly servername?: string;
}

export interface TransportOptions {
  readonly server: string;
  /** Covers connect, headers and the whole body of one attempt. */
  readonly timeoutMs?: number;
  /** Total attempts per request, including the first (default 3). */
  readonly attempts?: number;
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
  readonly maxResponseBytes?: number;
  readonly tls?: TlsOptions;
  /** Ask for gzip and decompress (default true). The cap applies to decompressed bytes. */
  readonly gzip?: boolean;
  /** Connections kept to the server at most (default: no limit); requests beyond wait for one. */
  readonly maxSockets?: number;
  /** Jitter source, injectable for tests. */
  readonly random?: () => number;
  /** Called before each retry with the error that caused it. */
  readonly onRetry?: (err: TransportError, attempt: number, delayMs: number) => void;
}

/** Counters shared across the requests of one logical call (retries, re-auth, renegotiation). */
export interface RequestStats {
  attempts: number;
  bytes: number;
}

export function newStats(): RequestStats {
  return { attempts: 0, bytes: 0 };
}

export interface RequestOptions {
  readonly query?: Readonly<Record<string, string>>;
  readonly headers?: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal;
  readonly stats?: RequestStats;
}

export interface HttpResponse {
  readonly status: number;
  readonly path: string;
  readonly contentType: string | undefined;
  /** The (decompressed) body. Iterate it once; a second iteration throws. */
  readonly body: AsyncIterable<Buffer>;
  readonly attempt: number;
}

export type ResponseHandler<T> = (res: HttpResponse) => Promise<T>;

/**
 * Backoff before retry number `attempt` (1 = first retry): exponential, capped, with "equal
 * jitter" so that agents restarted together do not retry in lockstep but never retry at once.
 */
export function backoffDelay(
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return ceiling / 2 + (random() * ceiling) / 2;
}

export class HttpTransport {
  readonly address: ServerAddress;
  private readonly timeoutMs: number;
  private readonly attempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  readonly maxResponseBytes: number;
  private readonly gzip: boolean;
  private readonly random: () => number;
  private readonly agent: http.Agent;

  constructor(private readonly opts: TransportOptions) {
    this.address = parseServer(opts.server);
    this.timeoutMs = positive(opts.timeoutMs, DEFAULT_TIMEOUT_MS, 'timeoutMs');
    this.attempts = Math.floor(positive(opts.attempts, DEFAULT_ATTEMPTS, 'attempts'));
    this.baseDelayMs = nonNegative(opts.baseDelayMs, DEFAULT_BASE_DELAY_MS, 'baseDelayMs');
    this.maxDelayMs = nonNegative(opts.maxDelayMs, DEFAULT_MAX_DELAY_MS, 'maxDelayMs');
    this.maxResponseBytes = positive(opts.maxResponseBytes, DEFAULT_MAX_RESPONSE_BYTES, 'maxResponseBytes');
    this.gzip = opts.gzip ?? true;
    this.random = opts.random ?? Math.random;
    const tls = opts.tls ?? {};
    const sockets = opts.maxSockets !== undefined ? { maxSockets: opts.maxSockets } : {};
    this.agent =
      this.address.kind === 'tcp' && this.address.protocol === 'https:'
        ? new (lazyHttps().Agent)({ keepAlive: true, ...sockets, ...tls })
        : new http.Agent({ keepAlive: true, ...sockets });
  }

  /**
   * GETs `path` and runs `handle` on a 2xx response within the same attempt (so the body is under
   * the attempt's timeout and a failed body is retried). A non-2xx status throws HttpStatusError
   * after reading at most ERROR_BODY_BYTES of its body.
   */
  async request<T>(path: string, opts: RequestOptions, handle: ResponseHandler<T>): Promise<T> {
    const target = this.target(path, opts.query);
    let last: unknown;
    for (let attempt = 1; attempt <= this.attempts; attempt++) {
      if (attempt > 1) {
        const wait = backoffDelay(attempt - 1, this.baseDelayMs, this.maxDelayMs, this.random);
        this.opts.onRetry?.(last as TransportError, attempt - 1, wait);
        await sleep(wait, opts.signal, target);
      }
      if (opts.stats) opts.stats.attempts++;
      try {
        return await this.attempt(target, opts, handle, attempt);
      } catch (err) {
        if (!(err instanceof TransportError) || !err.retryable) throw err;
        last = err;
      }
    }
    throw last;
  }

  /** Convenience: the whole 2xx body as UTF-8 text, for small documents (capped like any body). */
  async getText(path: string, opts: RequestOptions = {}): Promise<string> {
    return this.request(path, opts, (res) => readText(res.body));
  }

  /** Closes idle keep-alive connections. */
  close(): void {
    this.agent.destroy();
  }

  /** Path and query as sent; also what error messages show (headers, where tokens live, never are). */
  private target(path: string, query: RequestOptions['query']): string {
    const qs = query && Object.keys(query).length > 0 ? `?${new URLSearchParams(query).toString()}` : '';
    const prefix = this.address.kind === 'tcp' ? this.address.basePath : '';
    return `${prefix}${path}${qs}`;
  }

  private attempt<T>(target: string, opts: RequestOptions, handle: ResponseHandler<T>, attempt: number): Promise<T> {
    const exchange = new Exchange(this.requestOptions(target, opts.headers), target, {
      timeoutMs: this.timeoutMs,
      maxBytes: this.maxResponseBytes,
      secure: this.address.kind === 'tcp' && this.address.protocol === 'https:',
      ...(opts.signal !== undefined ? { signal: opts.signal } : {}),
      ...(opts.stats !== undefined ? { stats: opts.stats } : {}),
    });
    return exchange.run(async (res) => {
      if (res.status < 200 || res.status > 299) {
        const text = await readText(res.body, ERROR_BODY_BYTES);
        throw new HttpStatusError(target, res.status, text, res.contentType);
      }
      return handle({ ...res, attempt });
    });
  }

  private requestOptions(target: string, extra: RequestOptions['headers']): http.RequestOptions {
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': 'slurm-otel',
      ...(this.gzip ? { 'accept-encoding': 'gzip' } : {}),
      ...extra,
    };
    const base = { method: 'GET', path: target, headers, agent: this.agent };
    if (this.address.kind === 'unix')
      return { ...base, socketPath: this.address.socketPath, headers: { host: 'localhost', ...headers } };
    return { ...base, host: this.address.host, port: this.address.port, protocol: this.address.protocol };
  }
}

interface ExchangeLimits {
  readonly timeoutMs: number;
  readonly maxBytes: number;
  readonly secure: boolean;
  readonly signal?: AbortSignal;
  readonly stats?: RequestStats;
}

type RawResponse = Omit<HttpResponse, 'attempt'>;

/** One attempt: a request, its response and the single timer and abort hook that govern both. */
class Exchange {
  private req: http.ClientRequest | undefined;
  private stream: Readable | undefined;
  private failure: TransportError | undefined;
  private phase: TimeoutPhase = 'connect';
  private bytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly onAbort = (): void => this.fail(new AbortedError(this.path));

  constructor(
    private readonly options: http.RequestOptions,
    private readonly path: string,
    private readonly limits: ExchangeLimits,
  ) {}

  async run<T>(handle: (res: RawResponse) => Promise<T>): Promise<T> {
    if (this.limits.signal?.aborted) throw new AbortedError(this.path);
    this.limits.signal?.addEventListener('abort', this.onAbort, { once: true });
    this.timer = setTimeout(
      () => this.fail(new TimeoutError(this.path, this.limits.timeoutMs, this.phase, this.bytes)),
      this.limits.timeoutMs,
    );
    try {
      const res = await this.start();
      return await handle(res);
    } catch (err) {
      throw this.failure ?? err;
    } finally {
      clearTimeout(this.timer);
      this.limits.signal?.removeEventListener('abort', this.onAbort);
      // Whatever the handler left unread is dropped with its socket, never returned to the pool.
      if (this.stream !== undefined && !this.stream.readableEnded) this.stream.destroy();
      if (this.stream === undefined || !this.stream.readableEnded) this.req?.destroy();
    }
  }

  private start(): Promise<RawResponse> {
    return new Promise((resolve, reject) => {
      const client = this.limits.secure ? lazyHttps() : http;
      const req = client.request(this.options);
      this.req = req;
      req.on('socket', (socket) => {
        const connected = (): void => {
          if (this.phase === 'connect') this.phase = 'headers';
        };
        if (socket.connecting) socket.once(this.limits.secure ? 'secureConnect' : 'connect', connected);
        else connected();
      });
      req.on('error', (err) => reject(this.failure ?? networkError(this.path, err)));
      req.on('response', (res) => {
        this.phase = 'body';
        try {
          resolve(this.response(res));
        } catch (err) {
          reject(err);
        }
      });
      req.end();
    });
  }

  private response(res: http.IncomingMessage): RawResponse {
    const declared = Number(res.headers['content-length']);
    const encoding = String(res.headers['content-encoding'] ?? '').toLowerCase();
    if (Number.isFinite(declared) && declared > this.limits.maxBytes && encoding !== 'gzip') {
      const err = new TooLargeError(this.path, this.limits.maxBytes);
      this.fail(err);
      throw err;
    }
    let stream: Readable = res;
    if (encoding === 'gzip' || encoding === 'x-gzip') {
      const gunzip = zlib.createGunzip();
      res.on('error', (err) => gunzip.destroy(err));
      stream = res.pipe(gunzip);
    }
    this.stream = stream;
    const ct = res.headers['content-type'];
    return { status: res.statusCode ?? 0, path: this.path, contentType: ct, body: this.body(stream) };
  }

  private body(stream: Readable): AsyncIterable<Buffer> {
    let consumed = false;
    const iterate = async function* (this: Exchange): AsyncGenerator<Buffer> {
      if (consumed) throw new Error(`GET ${this.path}: body already consumed`);
      consumed = true;
      try {
        for await (const chunk of stream as AsyncIterable<Buffer>) {
          this.bytes += chunk.length;
          if (this.limits.stats) this.limits.stats.bytes += chunk.length;
          if (this.bytes > this.limits.maxBytes) this.fail(new TooLargeError(this.path, this.limits.maxBytes));
          if (this.failure) throw this.failure;
          yield chunk;
        }
      } catch (err) {
        throw this.failure ?? networkError(this.path, err);
      }
      if (this.failure) throw this.failure;
    };
    return { [Symbol.asyncIterator]: () => iterate.call(this) };
  }

  /** Records the first failure and tears the exchange down; the pending read rejects with it. */
  private fail(err: TransportError): void {
    if (this.failure !== undefined) return;
    this.failure = err;
    this.stream?.destroy(err);
    this.req?.destroy(err);
  }
}

function networkError(path: string, err: unknown): TransportError {
  if (err instanceof TransportError) return err;
  const e = err as NodeJS.ErrnoException;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const detail =
    code === undefined
      ? (e?.message ?? String(err))
      : `${code}${e.message && !e.message.startsWith(code) ? ` (${e.message})` : ''}`;
  return new NetworkError(path, code, detail);
}

/** Reads a body as UTF-8 text, stopping (without error) after `limit` bytes when a limit is given. */
export async function readText(body: AsyncIterable<Buffer>, limit = Infinity): Promise<string> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const chunk of body) {
    parts.push(chunk);
    n += chunk.length;
    if (n >= limit) break;
  }
  const buf = Buffer.concat(parts, n);
  return buf.subarray(0, Math.min(n, limit)).toString('utf8');
}

async function sleep(ms: number, signal: AbortSignal | undefined, path: string): Promise<void> {
  try {
    await delay(ms, undefined, signal ? { signal } : {});
  } catch {
    throw new AbortedError(path);
  }
}

function positive(v: number | undefined, fallback: number, name: string): number {
  if (v === undefined) return fallback;
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number, got ${v}`);
  return v;
}

function nonNegative(v: number | undefined, fallback: number, name: string): number {
  if (v === undefined) return fallback;
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be zero or more, got ${v}`);
  return v;
}
