/**
 * The agents' own HTTP server: read-only routes (GET and HEAD), bounded
 * request time, gzip when the client accepts it. Handlers never compute
 * metrics: they serve what the last collection rendered.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { gunzip, gzipSync } from 'node:zlib';
import { BasicAuth, type WebConfig } from './webconfig.js';

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
  if (!m || port > 65535) throw new Error(`invalid bind address "${value}": expected [host]:port, e.g. :9836 or 127.0.0.1:9836`);
  const host = m[1] ?? m[2];
  return { host: host === '' ? undefined : host, port };
}

export interface Endpoint {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export async function serve(
  bind: BindAddress,
  routes: Readonly<Record<string, Route>>,
  onRequest?: (path: string) => void,
  security: WebConfig = { users: new Map() },
): Promise<Endpoint> {
  const auth = new BasicAuth(security.users);
  const listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    if (!auth.check(req.headers.authorization)) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="slurm-otel"', 'content-type': 'text/plain' }).end('unauthorized\n');
      return;
    }
    void handle(routes, req, res, onRequest);
  };
  const tls = security.tls;
  const server = tls
    ? https.createServer({ cert: tls.cert, key: tls.key, ca: tls.ca, requestCert: tls.requireClientCert || tls.ca !== undefined, rejectUnauthorized: tls.requireClientCert }, listener)
    : http.createServer(listener);
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  server.keepAliveTimeout = 5_000;
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
    res.writeHead(500, { 'content-type': 'text/plain' }).end(`internal error: ${(err as Error).message}\n`);
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
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`internal error: ${(err as Error).message}\n`);
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
  return new Promise((resolve, reject) => gunzip(gzip, { chunkSize }, (err, out) => (err ? reject(err) : resolve(out))));
}

function acceptsGzip(req: http.IncomingMessage): boolean {
  const h = req.headers['accept-encoding'];
  return typeof h === 'string' && /\bgzip\b/.test(h);
}

export function textBody(text: string, status = 200): Body {
  return { contentType: 'text/plain; charset=utf-8', text, status };
}

export function htmlBody(text: string, status = 200): Body {
  return { contentType: 'text/html; charset=utf-8', text, status };
}
