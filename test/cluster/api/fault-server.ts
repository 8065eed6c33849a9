/**
 * A fake slurmrestd on loopback (TCP port 0 or a unix socket) that serves the fixtures of
 * fixtures/slurm/ and misbehaves on demand: hangs before headers or mid-body, trickles bytes
 * forever, answers any status, HTML, truncated JSON, an errors[] envelope, an oversized body,
 * resets the connection, and changes the API versions it serves while running.
 *
 * Every request is recorded (path and headers) so tests can count retries and check what was
 * sent. close() ends every connection and timer it opened.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import zlib from 'node:zlib';
import { FIXTURES } from '../fixtures.js';

export type Fault =
  | { readonly kind: 'status'; readonly status: number; readonly body?: string; readonly contentType?: string }
  /** Accepts the request and never answers. */
  | { readonly kind: 'hang-headers' }
  /** Sends headers and the first `afterBytes` of the real body, then stalls. */
  | { readonly kind: 'hang-body'; readonly afterBytes?: number }
  /** One byte of the real body every `everyMs`, never finishing. */
  | { readonly kind: 'trickle'; readonly everyMs: number }
  /** The real body in `chunkBytes` pieces, `delayMs` apart (it does finish). */
  | { readonly kind: 'slow'; readonly chunkBytes: number; readonly delayMs: number }
  | { readonly kind: 'html'; readonly status?: number }
  /** The real body cut to `keepBytes`, the response ended cleanly (chunked, no length). */
  | { readonly kind: 'truncated'; readonly keepBytes?: number }
  /** Headers with the full Content-Length, part of the body, then the socket is destroyed. */
  | { readonly kind: 'reset'; readonly afterBytes?: number }
  /** 200 with an errors[] envelope and an empty list, as slurmctld-side failures look. */
  | { readonly kind: 'errors'; readonly status?: number }
  /** The real answer, after `ms` (counted in `active` and `peak` meanwhile). */
  | { readonly kind: 'delay'; readonly ms: number }
  /** The real answer when the test calls release() (counted in `active` and `peak` meanwhile). */
  | { readonly kind: 'held' }
  /** A valid nodes response of about `bytes`, with or without Content-Length. */
  | { readonly kind: 'huge'; readonly bytes: number; readonly contentLength: boolean };

export interface RecordedRequest {
  readonly path: string;
  readonly headers: http.IncomingHttpHeaders;
}

/** How the fake judges credentials; `undefined` accepts everything. */
export interface FakeAuth {
  readonly valid: (token: string, user: string | undefined) => boolean;
  /** 22.05 answers a bad or expired token with 500 + errors[]; later releases with 401. */
  readonly rejectWith: 401 | 500;
}

export interface FaultServerOptions {
  readonly socketPath?: string;
  /** `/slurm/` versions served (default v0.0.44, v0.0.43). */
  readonly versions?: readonly string[];
  /** `/slurmdb/` versions served (default: same as versions). */
  readonly dbVersions?: readonly string[];
  /** Which discovery documents exist (default all three). */
  readonly discovery?: readonly string[];
  readonly auth?: FakeAuth;
  /** Compress responses when the client accepts gzip. */
  readonly gzip?: boolean;
}

interface Rule {
  readonly prefix: string;
  readonly fault: Fault;
  remaining: number;
}

/** What Slurm 22.05.8 answers (HTTP 500) to a bad, expired or malformed token: measured, not guessed. */
export const AUTH_ERROR_BODY = JSON.stringify({
  meta: {
    plugin: { type: 'openapi/v0.0.38', name: 'Slurm OpenAPI v0.0.38' },
    Slurm: { version: { major: 22, micro: 8, minor: 5 }, release: '22.05.8' },
  },
  errors: [{ error: 'Unspecified error', errno: -1 }],
  nodes: [],
});

export class FaultServer {
  versions: string[];
  dbVersions: string[];
  discovery: string[];
  auth: FakeAuth | undefined;
  gzip: boolean;
  readonly requests: RecordedRequest[] = [];
  /** Delayed requests waiting now, and the most ever waiting at once (per fault prefix). */
  readonly active = new Map<string, number>();
  readonly peak = new Map<string, number>();
  private readonly rules: Rule[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly held: { prefix: string; answer: () => void }[] = [];
  private constructor(
    private readonly server: http.Server,
    readonly url: string,
    opts: FaultServerOptions,
  ) {
    this.versions = [...(opts.versions ?? ['v0.0.44', 'v0.0.43'])];
    this.dbVersions = [...(opts.dbVersions ?? this.versions)];
    this.discovery = [...(opts.discovery ?? ['/openapi/v3', '/openapi.json', '/openapi'])];
    this.auth = opts.auth;
    this.gzip = opts.gzip ?? false;
  }

  static async start(opts: FaultServerOptions = {}): Promise<FaultServer> {
    const server = http.createServer((req, res) => self.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      if (opts.socketPath !== undefined) server.listen(opts.socketPath, resolve);
      else server.listen(0, '127.0.0.1', resolve);
    });
    const url =
      opts.socketPath !== undefined
        ? `unix:${opts.socketPath}`
        : `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const self = new FaultServer(server, url, opts);
    return self;
  }

  /** Applies `fault` to the next `times` requests whose path starts with `prefix`. */
  fault(prefix: string, fault: Fault, times = Infinity): this {
    this.rules.push({ prefix, fault, remaining: times });
    return this;
  }

  clearFaults(): void {
    this.rules.length = 0;
  }

  /** Answers the held requests of `prefix`; returns how many. */
  release(prefix: string): number {
    const mine = this.held.filter((h) => h.prefix === prefix);
    for (const h of mine) {
      this.held.splice(this.held.indexOf(h), 1);
      h.answer();
    }
    return mine.length;
  }

  /** Requests whose path starts with `prefix`. */
  count(prefix = '/'): number {
    return this.requests.filter((r) => r.path.startsWith(prefix)).length;
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.held.length = 0;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // -------------------------------------------------------------------------------------------

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const path = req.url ?? '/';
    this.requests.push({ path, headers: req.headers });
    const rule = this.rules.find((r) => r.remaining > 0 && path.startsWith(r.prefix));
    if (rule !== undefined) {
      rule.remaining--;
      return this.misbehave(rule.fault, path, res, rule.prefix);
    }
    const denied = this.checkAuth(req);
    if (denied !== undefined) return this.send(res, denied.status, denied.body, denied.type, req);
    const route = this.route(path);
    this.send(res, route.status, route.body, route.type, req);
  }

  private checkAuth(req: http.IncomingMessage): { status: number; body: string; type: string } | undefined {
    if (this.auth === undefined) return undefined;
    const token = header(req, 'x-slurm-user-token');
    if (token === undefined) return { status: 401, body: 'Authentication failure', type: 'text/plain' };
    if (this.auth.valid(token, header(req, 'x-slurm-user-name'))) return undefined;
    return this.auth.rejectWith === 401
      ? { status: 401, body: 'Authentication failure', type: 'text/plain' }
      : { status: 500, body: AUTH_ERROR_BODY, type: 'application/json' };
  }

  private route(path: string): { status: number; body: string; type: string } {
    const p = path.split('?')[0] as string;
    if (this.discovery.includes(p)) return json(this.openapi());
    const m = /^\/(slurm|slurmdb)\/(v\d+\.\d+\.\d+)\/(nodes|jobs|diag)\/?$/.exec(p);
    const served = m?.[1] === 'slurmdb' ? this.dbVersions : this.versions;
    if (m === null || !served.includes(m[2] as string)) return { status: 404, body: 'Not Found', type: 'text/plain' };
    const file = fixtureFile(m[1] as string, m[2] as string, m[3] as string);
    return file === undefined
      ? { status: 404, body: 'Not Found', type: 'text/plain' }
      : json(readFileSync(file, 'utf8'));
  }

  private openapi(): string {
    const paths: Record<string, unknown> = {};
    for (const v of this.versions)
      for (const ep of ['nodes', 'jobs', 'diag']) paths[`/slurm/${v}/${ep}/`] = { get: {} };
    for (const v of this.dbVersions) paths[`/slurmdb/${v}/jobs/`] = { get: {} };
    return JSON.stringify({ openapi: '3.0.3', info: { title: 'fake slurmrestd' }, paths });
  }

  private send(res: http.ServerResponse, status: number, body: string, type: string, req: http.IncomingMessage): void {
    const buf = Buffer.from(body);
    if (this.gzip && /gzip/.test(header(req, 'accept-encoding') ?? '')) {
      const z = zlib.gzipSync(buf);
      res.writeHead(status, { 'content-type': type, 'content-encoding': 'gzip', 'content-length': z.length });
      res.end(z);
      return;
    }
    res.writeHead(status, { 'content-type': type, 'content-length': buf.length });
    res.end(buf);
  }

  private misbehave(fault: Fault, path: string, res: http.ServerResponse, prefix: string): void {
    const real = (): Buffer => Buffer.from(this.route(path).body);
    switch (fault.kind) {
      case 'status':
        res.writeHead(fault.status, { 'content-type': fault.contentType ?? 'text/plain' });
        return void res.end(fault.body ?? `status ${fault.status}`);
      case 'hang-headers':
        return;
      case 'hang-body': {
        const body = real();
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
        return void res.write(body.subarray(0, fault.afterBytes ?? Math.floor(body.length / 2)));
      }
      case 'trickle':
        res.writeHead(200, { 'content-type': 'application/json' });
        return this.drip(res, real(), 1, fault.everyMs, false);
      case 'slow':
        res.writeHead(200, { 'content-type': 'application/json' });
        return this.drip(res, real(), fault.chunkBytes, fault.delayMs, true);
      case 'html':
        res.writeHead(fault.status ?? 200, { 'content-type': 'text/html; charset=utf-8' });
        return void res.end('<!DOCTYPE html><html><head><title>Login</title></head><body>Please sign in</body></html>');
      case 'truncated': {
        const body = real();
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(body.subarray(0, fault.keepBytes ?? Math.floor(body.length / 2)));
      }
      case 'reset': {
        const body = real();
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
        res.write(body.subarray(0, fault.afterBytes ?? 100));
        return void this.later(() => res.socket?.destroy(), 5);
      }
      case 'errors':
        res.writeHead(fault.status ?? 200, { 'content-type': 'application/json' });
        return void res.end(errorsEnvelope());
      case 'huge':
        return this.huge(res, fault.bytes, fault.contentLength);
      case 'delay':
        return this.later(this.waiting(prefix, res, real), fault.ms);
      case 'held':
        return void this.held.push({ prefix, answer: this.waiting(prefix, res, real) });
    }
  }

  /** Counts a request as waiting (active, peak); the function returned answers it for real. */
  private waiting(prefix: string, res: http.ServerResponse, real: () => Buffer): () => void {
    const now = (this.active.get(prefix) ?? 0) + 1;
    this.active.set(prefix, now);
    this.peak.set(prefix, Math.max(now, this.peak.get(prefix) ?? 0));
    return () => {
      this.active.set(prefix, (this.active.get(prefix) ?? 1) - 1);
      const body = real();
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
      res.end(body);
    };
  }

  /** Writes `body` in pieces; when `finish` is false it loops over the body forever (until close). */
  private drip(res: http.ServerResponse, body: Buffer, size: number, everyMs: number, finish: boolean): void {
    let at = 0;
    const step = (): void => {
      if (res.destroyed) return;
      if (at >= body.length) {
        if (finish) return void res.end();
        at = 0;
      }
      res.write(body.subarray(at, at + size));
      at += size;
      this.later(step, everyMs);
    };
    step();
  }

  private huge(res: http.ServerResponse, bytes: number, withLength: boolean): void {
    const head = Buffer.from('{"nodes":[');
    const tail = Buffer.from(']}');
    const one = Buffer.from(JSON.stringify({ name: 'n', state: ['IDLE'], comment: 'x'.repeat(1000) }));
    const count = Math.max(1, Math.ceil((bytes - head.length - tail.length) / (one.length + 1)));
    const total = head.length + tail.length + count * one.length + (count - 1);
    res.writeHead(200, { 'content-type': 'application/json', ...(withLength ? { 'content-length': total } : {}) });
    res.write(head);
    let i = 0;
    const pump = (): void => {
      while (i < count && !res.destroyed) {
        const ok = res.write(i === 0 ? one : Buffer.concat([Buffer.from(','), one]));
        i++;
        if (!ok) return void res.once('drain', pump);
      }
      if (!res.destroyed) res.end(tail);
    };
    pump();
  }

  private later(fn: () => void, ms: number): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function json(body: string): { status: number; body: string; type: string } {
  return { status: 200, body, type: 'application/json' };
}

function errorsEnvelope(): string {
  return JSON.stringify({
    meta: { plugin: { data_parser: 'data_parser/v0.0.44' }, slurm: { release: '25.11.7' } },
    errors: [
      {
        description: 'Unable to contact slurm controller',
        error_number: 1001,
        error: 'Unable to contact slurm controller (connect failure)',
        source: 'slurm_load_jobs()',
      },
    ],
    warnings: [],
    jobs: [],
  });
}

const RECORDED = join(FIXTURES, 'recorded', 'slurm-22.05', 'dbd');

/** The fixture for one endpoint of one version (v0.0.39 borrows v0.0.40's: no 23.02 recording). */
export function fixtureFile(api: string, version: string, endpoint: string): string | undefined {
  const minor = Number(version.split('.')[2]);
  if (minor >= 39) {
    const v = minor === 39 ? 'v0.0.40' : version;
    return join(FIXTURES, 'built', v, api === 'slurmdb' ? 'slurmdb-jobs.json' : `${endpoint}.json`);
  }
  if (api === 'slurmdb')
    return endpoint === 'jobs' ? join(RECORDED, 'v0.0.38', '01-jobs-slurmdb-jobs.json') : undefined;
  return join(RECORDED, version, `01-jobs-${endpoint}.json`);
}
