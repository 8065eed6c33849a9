/**
 * The agents' own HTTP server: read-only routes (GET and HEAD), bounded
 * request time, gzip when the client accepts it. Handlers never compute
 * metrics: they serve what the last collection rendered.
 *
 * Every connection is bounded in time and number (HttpLimits): a client that
 * sends headers slowly, idles, or requests an exposition and never reads it is
 * disconnected, so stalled scrapers cannot pin whole expositions in memory.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { gunzip, gzipSync } from 'node:zlib';
import { redactSecrets } from '../log.js';
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

/** Time and connection bounds of one endpoint (milliseconds, connections). */
export interface HttpLimits {
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
  /** Open connections per endpoint; more are closed as they arrive. */
  readonly maxConnections: number;
}

export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  writeTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 10_000,
  maxConnections: 64,
};

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
): Promise<Endpoint> {
  const auth = new BasicAuth(security.users, security.auth);
  const listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    boundWrite(res, limits.writeTimeoutMs);
    const verdict = auth
      .check(req.headers.authorization, req.socket.remoteAddress ?? '')
      .catch((): AuthVerdict => 'denied');
    void verdict.then((v) => {
      if (v === 'ok') return handle(routes, req, res, onRequest);
      if (v === 'limited')
        res
          .writeHead(429, { 'retry-after': String(Math.ceil(auth.retryAfterMs / 1000)), 'content-type': 'text/plain' })
          .end('too many login attempts; retry later\n');
      else
        res
          .writeHead(401, { 'www-authenticate': 'Basic realm="slurm-otel"', 'content-type': 'text/plain' })
          .end('unauthorized\n');
    });
  };
  const tls = security.tls;
  const options: http.ServerOptions = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Node checks the two timeouts above on this period (30 s by default, which stretched them).
    connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
  };
  const server = tls
    ? https.createServer({ ...options, ...tlsOptions(tls), handshakeTimeout: limits.idleTimeoutMs }, listener)
    : http.createServer(options, listener);
  if (tls) server.on('secureConnection', (socket: TLSSocket) => checkClientCert(socket, tls));
  server.maxConnections = limits.maxConnections;
  // With no 'timeout' listener Node destroys the idle socket itself.
  server.timeout = limits.idleTimeoutMs;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(bind.port, bind.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `${tls ? 'https' : 'http'}://${host}:${addr.port}`,
    port: addr.port,
    connections: () =>
      new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n)))),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
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
