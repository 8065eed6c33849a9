import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AbortedError,
  backoffDelay,
  HttpTransport,
  NetworkError,
  parseServer,
  readText,
  HttpStatusError,
  TimeoutError,
  TooLargeError,
  type TransportOptions,
} from '../../../src/cluster/http/transport.js';
import { FaultServer } from '../api/fault-server.js';
import { waitFor } from '../../support/tools.js';

const NODES = '/slurm/v0.0.44/nodes/';
const SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJyb290In0.c2VjcmV0LXNpZ25hdHVyZQ';

let servers: FaultServer[] = [];
let transports: HttpTransport[] = [];
let dirs: string[] = [];

afterEach(async () => {
  for (const t of transports) t.close();
  await Promise.all(servers.map((s) => s.close()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  servers = [];
  transports = [];
  dirs = [];
});

async function serve(opts: Parameters<typeof FaultServer.start>[0] = {}): Promise<FaultServer> {
  const s = await FaultServer.start(opts);
  servers.push(s);
  return s;
}

function transport(server: string, opts: Partial<TransportOptions> = {}): HttpTransport {
  const t = new HttpTransport({ server, timeoutMs: 2_000, attempts: 3, baseDelayMs: 1, maxDelayMs: 5, ...opts });
  transports.push(t);
  return t;
}

/** Fetches `path` and returns the body text, or the error thrown. */
async function get(t: HttpTransport, path: string, headers: Record<string, string> = {}): Promise<string | Error> {
  try {
    return await t.request(path, { headers }, (res) => readText(res.body));
  } catch (err) {
    return err as Error;
  }
}

describe('parseServer', () => {
  it('reads http, https with a prefix, and unix sockets', () => {
    expect(parseServer('http://slurm:6820')).toMatchObject({
      kind: 'tcp',
      protocol: 'http:',
      host: 'slurm',
      port: 6820,
      basePath: '',
    });
    expect(parseServer('https://gw.example/slurm/')).toMatchObject({ kind: 'tcp', port: 443, basePath: '/slurm' });
    expect(parseServer('unix:/run/slurmrestd.sock')).toEqual({ kind: 'unix', socketPath: '/run/slurmrestd.sock' });
    expect(parseServer('unix:///run/slurmrestd.sock')).toEqual({ kind: 'unix', socketPath: '/run/slurmrestd.sock' });
  });

  it('refuses what it cannot use', () => {
    expect(() => parseServer('slurm:6820')).toThrow(/protocol/);
    expect(() => parseServer('unix:relative.sock')).toThrow(/absolute/);
    expect(() => parseServer('http://user:pw@slurm:6820')).toThrow(/credentials/);
    expect(() => parseServer('not a url')).toThrow(/not a URL/);
  });
});

describe('backoffDelay', () => {
  it('stays between half and all of the capped exponential step', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 5000 }),
        fc.integer({ min: 1, max: 60_000 }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        (attempt, base, max, r) => {
          const ceiling = Math.min(max, base * 2 ** (attempt - 1));
          const d = backoffDelay(attempt, base, max, () => r);
          return d >= ceiling / 2 && d <= ceiling;
        },
      ),
    );
  });
});

// A broken timeout would hang: each test is bounded well below vitest's default.
describe('HttpTransport', { timeout: 10_000 }, () => {
  it('streams a body over TCP and sends the headers it is given', async () => {
    const s = await serve();
    const body = await get(transport(s.url), NODES, { 'X-SLURM-USER-TOKEN': 'abc' });
    expect(typeof body).toBe('string');
    expect(JSON.parse(body as string).nodes).toHaveLength(10);
    expect(s.requests[0]?.headers['x-slurm-user-token']).toBe('abc');
    expect(s.requests[0]?.headers['accept-encoding']).toBe('gzip');
  });

  it('talks to a unix socket', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slurm-otel-sock-'));
    dirs.push(dir);
    const s = await serve({ socketPath: join(dir, 'slurmrestd.sock') });
    expect(s.url).toBe(`unix:${join(dir, 'slurmrestd.sock')}`);
    const body = await get(transport(s.url), NODES);
    expect(JSON.parse(body as string).nodes).toHaveLength(10);
    expect(s.requests[0]?.headers.host).toBe('localhost');
  });

  it('keeps a path prefix from the server URL', async () => {
    const s = await serve();
    await get(transport(`${s.url}/gateway`), NODES);
    expect(s.requests[0]?.path).toBe(`/gateway${NODES}`);
  });

  it('decompresses gzip and caps the decompressed size', async () => {
    const s = await serve({ gzip: true });
    const plain = await get(transport(s.url), NODES);
    expect(JSON.parse(plain as string).nodes).toHaveLength(10);
    const capped = await get(transport(s.url, { maxResponseBytes: 4096 }), NODES);
    expect(capped).toBeInstanceOf(TooLargeError);
  });

  it('times out a server that never sends headers, retrying a bounded number of times', async () => {
    const s = await serve();
    s.fault(NODES, { kind: 'hang-headers' });
    const err = await get(transport(s.url, { timeoutMs: 150, attempts: 3 }), NODES);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).phase).toBe('headers');
    expect(s.count(NODES)).toBe(3);
  });

  it('times out a body that stalls after the headers', async () => {
    const s = await serve();
    s.fault(NODES, { kind: 'hang-body', afterBytes: 1000 });
    // Long enough for the headers (sent at once) to arrive first on a loaded machine.
    const err = await get(transport(s.url, { timeoutMs: 1000, attempts: 2 }), NODES);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).phase).toBe('body');
    expect((err as Error).message).toMatch(/stalled after 1000 bytes/);
    expect(s.count(NODES)).toBe(2);
  });

  it('times out a body that keeps trickling (the timer covers the whole body, not each chunk)', async () => {
    const s = await serve();
    s.fault(NODES, { kind: 'trickle', everyMs: 5 });
    const err = await get(transport(s.url, { timeoutMs: 1000, attempts: 1 }), NODES);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).phase).toBe('body');
  });

  it('accepts a slow body that finishes within the timeout', async () => {
    const s = await serve();
    s.fault(NODES, { kind: 'slow', chunkBytes: 4096, delayMs: 2 }, 1);
    const body = await get(transport(s.url, { timeoutMs: 10_000 }), NODES);
    expect(JSON.parse(body as string).nodes).toHaveLength(10);
    expect(s.count(NODES)).toBe(1);
  });

  it('retries 502, 503 and 504 and succeeds when the server recovers', async () => {
    for (const status of [502, 503, 504]) {
      const s = await serve();
      s.fault(NODES, { kind: 'status', status }, 2);
      const body = await get(transport(s.url, { attempts: 3 }), NODES);
      expect(JSON.parse(body as string).nodes, `status ${status}`).toHaveLength(10);
      expect(s.count(NODES)).toBe(3);
    }
  });

  it('gives up on 503 after the configured attempts', async () => {
    const s = await serve();
    s.fault(NODES, { kind: 'status', status: 503 });
    const err = await get(transport(s.url, { attempts: 4 }), NODES);
    expect(err).toBeInstanceOf(HttpStatusError);
    expect((err as HttpStatusError).status).toBe(503);
    expect(s.count(NODES)).toBe(4);
  });

  it('never retries 4xx or 500, and keeps the start of the error body', async () => {
    for (const status of [400, 401, 403, 404, 500]) {
      const s = await serve();
      s.fault(NODES, {
        kind: 'status',
        status,
        body: `{"errors":[{"error":"e${status}"}]}`,
        contentType: 'application/json',
      });
      const err = await get(transport(s.url, { attempts: 5 }), NODES);
      expect(err).toBeInstanceOf(HttpStatusError);
      expect((err as HttpStatusError).status).toBe(status);
      expect((err as HttpStatusError).body).toContain(`e${status}`);
      expect(s.count(NODES), `status ${status}`).toBe(1);
    }
  });

  it('retries a connection reset mid-body and reports a NetworkError when it persists', async () => {
    const s = await serve();
    s.fault(NODES, { kind: 'reset', afterBytes: 200 });
    const err = await get(transport(s.url, { attempts: 2 }), NODES);
    expect(err).toBeInstanceOf(NetworkError);
    expect(s.count(NODES)).toBe(2);
  });

  it('reports a refused connection as a NetworkError after its attempts', async () => {
    const s = await serve();
    const url = s.url;
    await s.close();
    servers = servers.filter((x) => x !== s);
    const err = await get(transport(url, { attempts: 2 }), NODES);
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).code).toBe('ECONNREFUSED');
  });

  it('caps a body with a Content-Length before reading it, and a chunked body while streaming', async () => {
    for (const contentLength of [true, false]) {
      const s = await serve();
      s.fault(NODES, { kind: 'huge', bytes: 1024 * 1024, contentLength });
      const t = transport(s.url, { maxResponseBytes: 64 * 1024 });
      let seen = 0;
      const err = await t
        .request(NODES, {}, async (res) => {
          for await (const chunk of res.body) seen += chunk.length;
        })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TooLargeError);
      expect((err as Error).message).toMatch(/65536-byte cap \(maxResponseBytes\)/);
      expect(seen).toBeLessThanOrEqual(64 * 1024);
      expect(s.count(NODES), 'too large is not retried').toBe(1);
    }
  });

  it('stops on an AbortSignal, also while waiting to retry', async () => {
    const s = await serve();
    s.fault(NODES, { kind: 'hang-headers' });
    const ac = new AbortController();
    const t = transport(s.url, { timeoutMs: 60_000 });
    const pending = t.request(NODES, { signal: ac.signal }, (res) => readText(res.body)).catch((e: unknown) => e);
    await waitFor('the first request to arrive', () => s.count(NODES) === 1);
    ac.abort();
    expect(await pending).toBeInstanceOf(AbortedError);

    s.clearFaults();
    s.fault(NODES, { kind: 'status', status: 503 });
    const slow = transport(s.url, { baseDelayMs: 60_000, maxDelayMs: 60_000 });
    const ac2 = new AbortController();
    const waiting = slow.request(NODES, { signal: ac2.signal }, (res) => readText(res.body)).catch((e: unknown) => e);
    await waitFor('the second request to arrive', () => s.count(NODES) === 2);
    ac2.abort();
    expect(await waiting).toBeInstanceOf(AbortedError);
    expect(s.count(NODES)).toBe(2);
  });

  it('lets the body be consumed once only', async () => {
    const s = await serve();
    const err = await transport(s.url)
      .request(NODES, {}, async (res) => {
        await readText(res.body);
        await readText(res.body);
      })
      .catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/already consumed/);
  });

  it('counts attempts and bytes across retries', async () => {
    const s = await serve();
    s.fault(NODES, { kind: 'status', status: 502 }, 1);
    const stats = { attempts: 0, bytes: 0 };
    const text = await transport(s.url).request(NODES, { stats }, (res) => readText(res.body));
    expect(stats.attempts).toBe(2);
    expect(stats.bytes).toBeGreaterThanOrEqual(Buffer.byteLength(text));
  });

  it('names the path in every error and never a header value', async () => {
    const s = await serve();
    const faults = [
      { kind: 'hang-headers' },
      { kind: 'status', status: 503 },
      { kind: 'reset' },
      { kind: 'huge', bytes: 200_000, contentLength: false },
    ] as const;
    for (const f of faults) {
      s.clearFaults();
      s.fault(NODES, f);
      const err = await get(transport(s.url, { timeoutMs: 150, attempts: 1, maxResponseBytes: 10_000 }), NODES, {
        'X-SLURM-USER-TOKEN': SECRET,
      });
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toContain(NODES);
      expect(`${(err as Error).message} ${(err as Error).stack}`).not.toContain(SECRET);
    }
  });
});
