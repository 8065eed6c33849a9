/**
 * The agents' own HTTP server: read-only routes (GET and HEAD), bounded
 * request time, gzip when the client accepts it. Handlers never compute
 * metrics: they serve what the last collection rendered.
 *
 * Every connection is bounded in time and number (HttpLimits): a client that
 * sends headers slowly, idles, or requests an exposition and never reads it is
 * disconnected, so stalled scrapers cannot pin whole expositions in memory.
 * Connections that have not produced a request cannot take every slot
 * (http-guard.ts): a slowloris attack costs a scraper nothing. What is refused
 * or cut is counted (ServeExtras.counts: the agent's self-monitoring) and
 * logged, at most one line a minute per endpoint and kind.
 */
import http from 'node:http';
import type https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { gunzip, gzipSync } from 'node:zlib';
import { lazyHttps } from '../lazy-modules.js';
import { redactSecrets, type Logger } from '../log.js';
import { RateLimitedFailures } from './failure-log.js';
import {
  ConnectionGuard,
  GuardCounts,
  sourceOf,
  type AuthThrottleReason,
  type ConnectionCloseReason,
  type ConnectionLimits,
} from './http-guard.js';
import { BasicAuth, type AuthVerdict, type TlsFiles, type WebConfig } from './webconfig.js';

export interface Body {
  readonly contentType: string;
  /** The text (an owner holding the body compressed only inflates it on access). */
  readonly text: string;
  /** Lazily computed and cached by the owner of the body. */
  gzip?: Buffer;
  /**
   * Set when the owner holds the body compressed only (`gzip` is then set): its length in bytes
   * once inflated. The first client that does not accept gzip has it inflated, off the event
   * loop, into `inflated`, which later ones are served from.
   */
  readonly inflatedBytes?: number;
  inflated?: Promise<Buffer>;
  readonly status?: number;
}

export type Route = (req: http.IncomingMessage) => Body | Promise<Body>;

export interface BindAddress {
  readonly host: string | undefined;
  readonly port: number;
}

/** Parses `:9836`, `127.0.0.1:9836`, `[::1]:9836` or `host:0` (any free port). */
export function parseBindAddress(value: string): BindAddress {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535)
    throw new Error(`invalid bind address "${value}": expected [host]:port, e.g. :9836 or 127.0.0.1:9836`);
  const host = m[1] ?? m[2];
  return { host: host === '' ? undefined : host, port };
}

/** Time and connection bounds of one endpoint (milliseconds, connections; see http-guard.ts). */
export interface HttpLimits extends ConnectionLimits {
  /** From connecting to the end of the request headers. */
  readonly headersTimeoutMs: number;
  /** From connecting to the end of the whole request. */
  readonly requestTimeoutMs: number;
  /** From the request's arrival to the last byte of its response taken by the client. */
  readonly writeTimeoutMs: number;
  /** A keep-alive connection with no request in progress. */
  readonly keepAliveTimeoutMs: number;
  /** A connection on which nothing moves in either direction (TLS handshake included). */
  readonly idleTimeoutMs: number;
  /** From connecting to the end of the TLS handshake. */
  readonly handshakeTimeoutMs: number;
}

export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  writeTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 10_000,
  handshakeTimeoutMs: 5_000,
  maxConnections: 64,
  // A handful of scrapers per agent each hold one connection, idle between scrapes: 16 leave them
  // room, and what an attacker holds beyond is closed oldest first.
  maxUnfinished: 16,
  maxConnectionsPerAddress: 32,
  maxUnfinishedPerAddress: 8,
};

/** What an endpoint is called in self-monitoring and logs, where it logs, and where it counts. */
export interface ServeExtras {
  /** `metrics` or `monitoring` for the agents' two endpoints (the `endpoint` label). */
  readonly name?: string;
  readonly logger?: Logger;
  /** Where what the endpoint refuses or cuts is counted (the agent's SelfMonitor.httpCounts). */
  readonly counts?: GuardCounts;
}

export interface Endpoint {
  readonly url: string;
  readonly port: number;
  /** Connections open now. */
  connections(): Promise<number>;
  close(): Promise<void>;
}

export async function serve(
  bind: BindAddress,
  routes: Readonly<Record<string, Route>>,
  onRequest?: (path: string) => void,
  security: WebConfig = { users: new Map() },
  limits: HttpLimits = DEFAULT_HTTP_LIMITS,
  extras: ServeExtras = {},
): Promise<Endpoint> {
  const name = extras.name ?? 'http';
  const shed = shedding(name, extras);
  const guard = new ConnectionGuard(limits, shed.connection);
  const auth = new BasicAuth(security.users, { ...security.auth, onThrottled: shed.auth });
  const listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const socket = req.socket;
    guard.started(socket);
    res.once('close', () => guard.ended(socket));
    boundWrite(res, limits.writeTimeoutMs);
    const verdict = auth
      .check(req.headers.authorization, socket.remoteAddress ?? '', () => socket.destroyed)
      .catch((): AuthVerdict => 'denied');
    void verdict.then((v) => answer(v, auth, routes, req, res, onRequest));
  };
  const server = createServer(security.tls, limits, listener);
  server.on('connection', (socket: Socket) => guard.admit(socket));
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') shed.connection('timeout', sourceOf(socket.remoteAddress));
    refuseBadRequest(err, socket, guard.isBusy(socket));
  });
  server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (err.code === 'ERR_TLS_HANDSHAKE_TIMEOUT') shed.connection('handshake_timeout', sourceOf(socket.remoteAddress));
  });
  // With no 'timeout' listener Node destroys the idle socket itself.
  server.timeout = limits.idleTimeoutMs;
  await listen(server, bind);
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `${security.tls ? 'https' : 'http'}://${host}:${addr.port}`,
    port: addr.port,
    connections: () =>
      new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n)))),
    close: () =>
      new Promise<void>((resolve) => {
        // Unfinished requests and TLS handshakes in progress are not Node's to close: the guard's.
        guard.closeAll();
        auth.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function createServer(
  tls: TlsFiles | undefined,
  limits: HttpLimits,
  listener: http.RequestListener,
): http.Server | https.Server {
  const options: http.ServerOptions = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Node checks the two timeouts above on this period (30 s by default, which stretched them).
    connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
  };
  if (!tls) return http.createServer(options, listener);
  // Loaded only here (lazyHttps): an endpoint without TLS never pays for it.
  const server = lazyHttps().createServer(
    { ...options, ...tlsOptions(tls), handshakeTimeout: limits.handshakeTimeoutMs },
    listener,
  );
  server.on('secureConnection', (socket: TLSSocket) => checkClientCert(socket, tls));
  return server;
}

function listen(server: http.Server | https.Server, bind: BindAddress): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(bind.port, bind.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function answer(
  v: AuthVerdict,
  auth: BasicAuth,
  routes: Readonly<Record<string, Route>>,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  onRequest?: (path: string) => void,
): void {
  if (v === 'ok') return void handle(routes, req, res, onRequest);
  if (v === 'limited')
    res
      .writeHead(429, { 'retry-after': String(Math.ceil(auth.retryAfterMs / 1000)), 'content-type': 'text/plain' })
      .end('too many login attempts; retry later\n');
  else
    res
      .writeHead(401, { 'www-authenticate': 'Basic realm="slurm-otel"', 'content-type': 'text/plain' })
      .end('unauthorized\n');
}

/**
 * What Node does with a request it cannot take when no one listens for clientError (which we do,
 * to count timeouts): a status line where no response is under way, then the connection closed.
 */
function refuseBadRequest(err: NodeJS.ErrnoException, socket: Socket, responding: boolean): void {
  if (!responding && socket.writable) {
    const status =
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? '408 Request Timeout'
        : err.code === 'HPE_HEADER_OVERFLOW'
          ? '431 Request Header Fields Too Large'
          : '400 Bad Request';
    socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`);
  }
  socket.destroy();
}

/** Counts and logs (at most a line a minute per kind) what the endpoint refuses or cuts. */
function shedding(
  name: string,
  extras: ServeExtras,
): {
  connection: (reason: ConnectionCloseReason, source: string) => void;
  auth: (reason: AuthThrottleReason, source: string) => void;
} {
  const counts = extras.counts ?? new GuardCounts();
  counts.register(name);
  const logger = extras.logger;
  const connLog = logger && new RateLimitedFailures(logger, 'HTTP endpoint closed connections to keep serving');
  const authLog = logger && new RateLimitedFailures(logger, 'HTTP endpoint answered password checks 429');
  return {
    connection: (reason, source) => {
      counts.add('connections', name, reason);
      connLog?.failed({ endpoint: name, reason, source });
    },
    auth: (reason, source) => {
      counts.add('auth', name, reason);
      authLog?.failed({ endpoint: name, reason, source });
    },
  };
}

async function handle(
  routes: Readonly<Record<string, Route>>,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  onRequest?: (path: string) => void,
): Promise<void> {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
    return;
  }
  const route = routes[path];
  if (!route) {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    return;
  }
  onRequest?.(path);
  let body: Body;
  try {
    body = await route(req);
  } catch (err) {
    res
      .writeHead(500, { 'content-type': 'text/plain' })
      .end(`internal error: ${redactSecrets((err as Error).message)}\n`);
    return;
  }
  const headers: http.OutgoingHttpHeaders = { 'content-type': body.contentType, vary: 'Accept-Encoding' };
  const head = req.method === 'HEAD';
  if (body.inflatedBytes !== undefined && body.gzip !== undefined) {
    const gzip = body.gzip;
    if (acceptsGzip(req)) {
      res.writeHead(body.status ?? 200, { ...headers, 'content-encoding': 'gzip', 'content-length': gzip.length });
      res.end(head ? undefined : gzip);
      return;
    }
    let text: Buffer;
    try {
      text = await (body.inflated ??= inflate(gzip, body.inflatedBytes));
    } catch (err) {
      body.inflated = undefined;
      res
        .writeHead(500, { 'content-type': 'text/plain' })
        .end(`internal error: ${redactSecrets((err as Error).message)}\n`);
      return;
    }
    res.writeHead(body.status ?? 200, { ...headers, 'content-length': text.length });
    res.end(head ? undefined : text);
    return;
  }
  let payload: Buffer | string = body.text;
  if (acceptsGzip(req) && body.text.length > 1024) {
    body.gzip ??= gzipSync(body.text, { level: 1 });
    payload = body.gzip;
    headers['content-encoding'] = 'gzip';
  }
  headers['content-length'] = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
  res.writeHead(body.status ?? 200, headers);
  res.end(head ? undefined : payload);
}

/** Inflates on the thread pool, into one buffer of the known size (no pieces to join). */
function inflate(gzip: Buffer, bytes: number): Promise<Buffer> {
  const chunkSize = Math.max(64 * 1024, bytes + 1);
  return new Promise((resolve, reject) =>
    gunzip(gzip, { chunkSize }, (err, out) => (err ? reject(err) : resolve(out))),
  );
}

/**
 * A response that the client does not take within the bound loses its connection: a scraper
 * that asks and never reads would otherwise hold the whole exposition in the socket's buffer.
 */
function boundWrite(res: http.ServerResponse, ms: number): void {
  const timer = setTimeout(() => res.destroy(), ms);
  timer.unref();
  res.once('close', () => clearTimeout(timer));
}

/** The listener options for a client_auth_type; the checks Node cannot make are in checkClientCert. */
function tlsOptions(tls: TlsFiles): https.ServerOptions {
  const base = { cert: tls.cert, key: tls.key, ...(tls.ca ? { ca: tls.ca } : {}) };
  if (tls.clientAuth === 'NoClientCert') return { ...base, requestCert: false };
  return { ...base, requestCert: true, rejectUnauthorized: tls.clientAuth === 'RequireAndVerifyClientCert' };
}

/**
 * As Go's crypto/tls: RequireAnyClientCert wants a certificate and accepts any;
 * VerifyClientCertIfGiven accepts none, but verifies one that is given.
 */
function checkClientCert(socket: TLSSocket, tls: TlsFiles): void {
  const given = Object.keys(socket.getPeerCertificate()).length > 0;
  if (tls.clientAuth === 'RequireAnyClientCert' && !given) (socket as Socket).destroy();
  if (tls.clientAuth === 'VerifyClientCertIfGiven' && given && !socket.authorized) (socket as Socket).destroy();
}

/**
 * Accept-Encoding as RFC 9110 reads it: codings are case-insensitive, `q=0` refuses one, and
 * `*` stands for any coding not listed.
 */
export function acceptsGzip(req: Pick<http.IncomingMessage, 'headers'>): boolean {
  const h = req.headers['accept-encoding'];
  if (typeof h !== 'string') return false;
  let star: boolean | undefined;
  for (const part of h.split(',')) {
    const [coding = '', ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    const q = params.map((p) => /^q=([0-9.]+)$/.exec(p)?.[1]).find((v) => v !== undefined);
    const accepted = q === undefined || Number(q) > 0;
    if (coding === 'gzip' || coding === 'x-gzip') return accepted;
    if (coding === '*') star = accepted;
  }
  return star ?? false;
}

export function textBody(text: string, status = 200): Body {
  return { contentType: 'text/plain; charset=utf-8', text, status };
}

export function htmlBody(text: string, status = 200): Body {
  return { contentType: 'text/html; charset=utf-8', text, status };
}
