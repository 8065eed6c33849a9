/**
 * The shared HTTP server against hostile clients, with raw sockets on loopback: partial headers,
 * a client that asks for a large exposition and never reads it, more connections than the cap;
 * and Accept-Encoding read as RFC 9110 says.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  acceptsGzip,
  DEFAULT_HTTP_LIMITS,
  serve,
  textBody,
  type Endpoint,
  type HttpLimits,
} from '../../src/telemetry/http.js';
import { GuardCounts, LINGER_MS } from '../../src/telemetry/http-guard.js';
import { waitFor } from '../support/tools.js';

let endpoint: Endpoint | undefined;
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await endpoint?.close();
  endpoint = undefined;
});

const TIGHT: HttpLimits = {
  ...DEFAULT_HTTP_LIMITS,
  headersTimeoutMs: 300,
  requestTimeoutMs: 600,
  writeTimeoutMs: 500,
  keepAliveTimeoutMs: 300,
  idleTimeoutMs: 600,
};

function connect(ep: Endpoint): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(ep.port, '127.0.0.1', () => resolve(s));
    s.on('error', () => undefined);
    s.once('error', reject);
    sockets.push(s);
  });
}

/** An endpoint on a free loopback port serving `body` at /metrics, under the given limits. */
function serveMetrics(body: string, limits: HttpLimits = TIGHT): Promise<Endpoint> {
  return serve({ host: '127.0.0.1', port: 0 }, { '/metrics': () => textBody(body) }, undefined, undefined, limits);
}

/** Resolves with what the server sent once it closed the connection. */
function closed(s: net.Socket): Promise<string> {
  let got = '';
  s.on('data', (d: Buffer) => (got += d.toString('latin1')));
  return new Promise((resolve) => s.once('close', () => resolve(got)));
}

describe('HTTP server limits', () => {
  it('closes a connection whose headers never complete', async () => {
    endpoint = await serveMetrics('up 1\n');
    const s = await connect(endpoint);
    s.write('GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const got = await closed(s);
    expect(got === '' || got.startsWith('HTTP/1.1 408')).toBe(true);
    expect(await endpoint.connections()).toBe(0);
  });

  it('drops a client that asks for a large body and never reads it', async () => {
    const big = 'x'.repeat(64 * 1024 * 1024);
    endpoint = await serveMetrics(big);
    const s = await connect(endpoint);
    s.pause();
    s.write('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n');
    await waitFor('the connection accepted', async () => (await endpoint?.connections()) === 1);
    await waitFor('the connection dropped', async () => (await endpoint?.connections()) === 0);
  });

  it('closes a keep-alive connection left idle', async () => {
    endpoint = await serveMetrics('up 1\n');
    const s = await connect(endpoint);
    s.write('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(await closed(s)).toMatch(/^HTTP\/1\.1 200[\s\S]*up 1\n$/);
  });

  it('closes the oldest connection without a request to make room for a newcomer', async () => {
    const counts = new GuardCounts();
    endpoint = await serve(
      { host: '127.0.0.1', port: 0 },
      { '/metrics': () => textBody('up 1\n') },
      undefined,
      undefined,
      { ...DEFAULT_HTTP_LIMITS, maxConnections: 2 },
      { name: 'metrics', counts },
    );
    const first = await connect(endpoint);
    const firstClosed = closed(first);
    await connect(endpoint);
    await waitFor('two connections accepted', async () => (await endpoint?.connections()) === 2);
    const third = await connect(endpoint);
    expect(await firstClosed).toBe('');
    third.write('GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(await closed(third)).toMatch(/^HTTP\/1\.1 200[\s\S]*up 1\n$/);
    expect(counts.get('connections', 'metrics', 'evicted')).toBe(1);
  });

  it('refuses a newcomer only when every slot has a request in progress, and never cuts those', async () => {
    const counts = new GuardCounts();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let asked = 0;
    const slow = async () => {
      asked++;
      await gate;
      return textBody('up 1\n');
    };
    endpoint = await serve(
      { host: '127.0.0.1', port: 0 },
      { '/metrics': slow },
      undefined,
      undefined,
      { ...DEFAULT_HTTP_LIMITS, maxConnections: 2 },
      { name: 'metrics', counts },
    );
    const busy = [await connect(endpoint), await connect(endpoint)];
    const answers = busy.map((s) => closed(s));
    for (const s of busy) s.write('GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await waitFor('both requests in progress', () => asked === 2);
    const third = await connect(endpoint);
    expect(await closed(third)).toBe('');
    expect(counts.get('connections', 'metrics', 'refused')).toBe(1);
    release();
    for (const a of await Promise.all(answers)) expect(a).toMatch(/^HTTP\/1\.1 200[\s\S]*up 1\n$/);
  });

  it('docs/operations.md states the default limits', () => {
    const page = fs.readFileSync(path.join(__dirname, '../../docs/operations.md'), 'utf8');
    const l = DEFAULT_HTTP_LIMITS;
    for (const [what, ms] of [
      ['headers', l.headersTimeoutMs],
      ['request', l.requestTimeoutMs],
      ['response', l.writeTimeoutMs],
      ['idle', l.idleTimeoutMs],
      ['keep-alive', l.keepAliveTimeoutMs],
      ['TLS handshake', l.handshakeTimeoutMs],
    ] as const) {
      expect(page, what).toMatch(new RegExp(`${what}[^|\\n]*\\| ${ms / 1000} s`, 'i'));
    }
    expect(page).toMatch(
      new RegExp(`${l.maxConnections} connections are open per endpoint, ${l.maxConnectionsPerAddress} per`),
    );
    expect(page).toMatch(new RegExp(`${l.maxUnfinished} connections without a request in progress`));
    expect(page).toMatch(new RegExp(`lingered for ${LINGER_MS / 1000 === 1 ? 'a second' : `${LINGER_MS / 1000} s`}`));
    expect(page).toMatch(new RegExp(`, ${l.maxUnfinishedPerAddress} per\\s+address`));
  });
});

describe('Accept-Encoding', () => {
  const gz = (h: string | undefined) => acceptsGzip({ headers: h === undefined ? {} : { 'accept-encoding': h } });

  it.each([
    ['gzip', true],
    ['GZIP', true],
    ['deflate, Gzip;q=0.5', true],
    ['x-gzip', true],
    ['gzip;q=0', false],
    ['gzip; q=0.000', false],
    ['br, *', true],
    ['*;q=0', false],
    ['gzip;q=0, *', false],
    ['identity', false],
    ['gzipped', false],
    ['', false],
    [undefined, false],
  ])('%j → %s', (header, expected) => {
    expect(gz(header)).toBe(expected);
  });

  it('serves identity to a client that refuses gzip with q=0', async () => {
    const text = 'a'.repeat(10_000);
    endpoint = await serve({ host: '127.0.0.1', port: 0 }, { '/metrics': () => textBody(text) });
    const res = await fetch(`${endpoint.url}/metrics`, { headers: { 'accept-encoding': 'gzip;q=0' } });
    expect(res.headers.get('content-encoding')).toBeNull();
    expect(await res.text()).toBe(text);
  });
});
