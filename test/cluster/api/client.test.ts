import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { jwtVerify } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import {
  keyFileSigner,
  noAuth,
  signHs256,
  staticToken,
  tokenFile,
  type TokenSource,
} from '../../../src/cluster/api/http/auth.js';
import { orThrow, type CallResult } from '../../../src/cluster/api/call-result.js';
import { SlurmClient, type SlurmClientOptions } from '../../../src/cluster/api/client.js';
import { isAuthMessage } from '../../../src/cluster/api/failures.js';
import { CallError } from '../../../src/cluster/http/failure.js';
import { createLogger, type Logger } from '../../../src/log.js';
import { silentLogger } from '../../support/log.js';
import { waitFor } from '../../support/tools.js';
import { FaultServer, type FaultServerOptions } from './fault-server.js';

const KEY = Buffer.from('fault-server-signing-key-0123456789');
const NOW = Math.floor(Date.now() / 1000);

let servers: FaultServer[] = [];
let clients: SlurmClient[] = [];
let dirs: string[] = [];
afterEach(async () => {
  for (const c of clients) c.close();
  await Promise.all(servers.map((s) => s.close()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  servers = [];
  clients = [];
  dirs = [];
});

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'slurm-otel-client-'));
  dirs.push(d);
  return d;
}

async function serve(opts: FaultServerOptions = {}): Promise<FaultServer> {
  const s = await FaultServer.start(opts);
  servers.push(s);
  return s;
}

function client(server: FaultServer, opts: Partial<SlurmClientOptions> = {}): SlurmClient {
  const c = new SlurmClient({
    server: server.url,
    tokenSource: noAuth(),
    requestTimeoutMs: 2_000,
    retries: 2,
    retryBaseDelayMs: 1,
    logger: silentLogger(),
    ...opts,
  });
  clients.push(c);
  return c;
}

/** What slurmrestd's auth/jwt checks, synchronously: signature, `sun`, `exp`. */
function hs256Valid(key: Buffer, token: string): boolean {
  const [h, p, s] = token.split('.');
  if (h === undefined || p === undefined || s === undefined) return false;
  if (createHmac('sha256', key).update(`${h}.${p}`).digest('base64url') !== s) return false;
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as { sun?: unknown; exp?: unknown };
  return typeof claims.sun === 'string' && typeof claims.exp === 'number' && claims.exp > NOW;
}

/** Counts invalidate() calls of a source. */
function counting(src: TokenSource): TokenSource & { invalidations: number } {
  const out = {
    invalidations: 0,
    headers: () => src.headers(),
    describe: () => src.describe(),
    invalidate: () => (out.invalidations++, src.invalidate()),
  };
  return out;
}

function failureOf<T>(r: CallResult<T>) {
  expect(r.ok, r.ok ? 'expected a failure' : '').toBe(false);
  return (r as Extract<CallResult<T>, { ok: false }>).failure;
}

function capture(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { logger: createLogger({ level: 'debug', format: 'json', destination }), lines };
}

describe('SlurmClient negotiation', () => {
  it('picks the newest served version from /openapi/v3 and logs the choice', async () => {
    const s = await serve({ versions: ['v0.0.43', 'v0.0.44', 'v0.0.99'] });
    const { logger, lines } = capture();
    const neg = await client(s, { logger }).negotiate();
    expect(neg.ok && neg.negotiated).toMatchObject({
      version: 'v0.0.44',
      slurmdbVersion: 'v0.0.44',
      source: 'openapi',
    });
    expect(s.requests.map((r) => r.path)).toEqual(['/openapi/v3']);
    expect(lines.some((l) => l.includes('"api_version":"v0.0.44"'))).toBe(true);
  });

  it('uses a pinned version, and says clearly when it is not served', async () => {
    const s = await serve({ versions: ['v0.0.44', 'v0.0.43'] });
    const pinned = await client(s, { apiVersion: 'v0.0.43' }).nodes();
    expect(pinned.ok && pinned.version).toBe('v0.0.43');
    const missing = await client(s, { apiVersion: 'v0.0.41' }).nodes();
    expect(failureOf(missing)).toMatchObject({
      kind: 'version',
      message: expect.stringMatching(/v0.0.41 was requested but slurmrestd serves only v0.0.44, v0.0.43/),
    });
  });

  it('falls back to /openapi.json and /openapi', async () => {
    const s = await serve({ versions: ['v0.0.42'], discovery: ['/openapi'] });
    const neg = await client(s).negotiate();
    expect(neg.ok && neg.negotiated.version).toBe('v0.0.42');
    expect(s.requests.map((r) => r.path)).toEqual(['/openapi/v3', '/openapi.json', '/openapi']);
  });

  it('probes /slurm/vX/diag/ newest first when no discovery document exists, and logs the release', async () => {
    const s = await serve({ versions: ['v0.0.42', 'v0.0.41'], discovery: [] });
    const { logger, lines } = capture();
    const neg = await client(s, { logger }).negotiate();
    expect(neg.ok && neg.negotiated).toMatchObject({ version: 'v0.0.42', source: 'probe' });
    expect(s.requests.filter((r) => r.path.includes('/diag')).map((r) => r.path)).toEqual([
      '/slurm/v0.0.45/diag/',
      '/slurm/v0.0.44/diag/',
      '/slurm/v0.0.43/diag/',
      '/slurm/v0.0.42/diag/',
    ]);
    expect(lines.some((l) => l.includes('"slurm_release":"24.11.6"'))).toBe(true);
  });

  it('reports a version failure when nothing it understands is served', async () => {
    const s = await serve({ versions: [], discovery: [] });
    const r = await client(s).nodes();
    expect(failureOf(r).kind).toBe('version');
    expect(s.count('/slurm/')).toBe(10);
  });

  it('shares one negotiation between concurrent calls', async () => {
    const s = await serve();
    const c = client(s);
    const results = await Promise.all([c.nodes(), c.jobs(), c.diag()]);
    expect(results.every((r) => r.ok)).toBe(true);
    expect(s.count('/openapi')).toBe(1);
  });
});

describe('SlurmClient endpoints', () => {
  it('decodes nodes, jobs, diag and accounting jobs of v0.0.44, with timing', async () => {
    const s = await serve();
    const c = client(s);
    const nodes = orThrow(await c.nodes());
    expect(nodes.items).toHaveLength(10);
    expect(nodes.meta.slurm_release).toBe('25.11.7');
    expect(orThrow(await c.jobs()).items).toHaveLength(10);
    const diag = await c.diag();
    expect(diag.ok && diag.data.items[0]?.schedule_cycle_sum).toBe(6442450944);
    expect(diag.timing).toMatchObject({ attempts: 1 });
    expect(diag.timing.bytes).toBeGreaterThan(1000);
    expect(diag.timing.durationMs).toBeGreaterThanOrEqual(0);
    const acct = await c.accountingJobs({
      cluster: 'gpu-lab',
      startTime: 1_764_000_000,
      endTime: new Date(1_764_003_600_000),
    });
    expect(orThrow(acct).items.every((j) => j.source === 'accounting')).toBe(true);
    const path = s.requests.at(-1)?.path ?? '';
    expect(path.split('?')[0]).toBe('/slurmdb/v0.0.44/jobs/');
    expect(Object.fromEntries(new URLSearchParams(path.split('?')[1]))).toEqual({
      cluster: 'gpu-lab',
      start_time: 'uts1764000000',
      end_time: 'uts1764003600',
      skip_steps: 'true',
      disable_truncate_usage_time: 'true',
    });
  });

  it('speaks v0.0.38 to Slurm 22.05 (paths without trailing slash)', async () => {
    const s = await serve({ versions: ['v0.0.38', 'v0.0.37', 'v0.0.36'] });
    const c = client(s);
    const nodes = await c.nodes();
    expect(nodes.ok && nodes.version).toBe('v0.0.38');
    expect(
      orThrow(nodes)
        .items.map((n) => n.name)
        .sort(),
    ).toEqual(['node1', 'node2', 'node3', 'node4']);
    expect(orThrow(nodes).meta.slurm_release).toBe('22.05.8');
    expect(orThrow(await c.accountingJobs({ startTime: 0, endTime: 1 })).items.length).toBeGreaterThan(0);
    expect(s.requests.map((r) => r.path.split('?')[0])).toContain('/slurm/v0.0.38/nodes');
    expect(s.requests.map((r) => r.path.split('?')[0])).toContain('/slurmdb/v0.0.38/jobs');
  });

  it('says accounting is missing when no /slurmdb/ version is served, and finds it by renegotiating after the wait', async () => {
    const s = await serve({ dbVersions: [] });
    let now = 0;
    const c = client(s, { now: () => now, absentRetryMs: 600_000 });
    const q = { startTime: 0, endTime: 1 };
    expect(failureOf(await c.accountingJobs(q))).toMatchObject({
      kind: 'absent',
      absence: 'new',
      message: expect.stringMatching(/no \/slurmdb\/ API version/),
    });
    expect(failureOf(await c.qos())).toMatchObject({ kind: 'absent', absence: 'known' });
    expect(s.requests.map((r) => r.path)).toEqual(['/openapi/v3']);
    s.dbVersions = ['v0.0.44'];
    now += 600_000;
    expect((await c.accountingJobs(q)).ok).toBe(true);
    expect(s.count('/openapi/v3')).toBe(2);
  });

  it('says accounting is unavailable when the pinned version has no /slurmdb/ counterpart', async () => {
    const s = await serve({ dbVersions: ['v0.0.43'] });
    const r = await client(s, { apiVersion: 'v0.0.44' }).accountingJobs({ startTime: 0, endTime: 1 });
    expect(failureOf(r)).toMatchObject({ kind: 'version', message: expect.stringMatching(/v0\.0\.44 was requested/) });
  });

  it('works over a unix socket with no authentication', async () => {
    const dir = tmp();
    const s = await serve({ socketPath: join(dir, 'rest.sock') });
    const r = await client(s).nodes();
    expect(orThrow(r).items).toHaveLength(10);
    expect(s.requests.every((req) => req.headers['x-slurm-user-token'] === undefined)).toBe(true);
  });

  it('reads gzip responses', async () => {
    const s = await serve({ gzip: true });
    expect(orThrow(await client(s).jobs()).items).toHaveLength(10);
  });
});

describe('SlurmClient authentication', () => {
  it('401 → the token file is re-read once and the call succeeds with the new token', async () => {
    const dir = tmp();
    const path = join(dir, 'token');
    const old = await signHs256(KEY, 'root', NOW - 100, NOW - 10);
    const fresh = await signHs256(KEY, 'root', NOW, NOW + 600);
    writeFileSync(path, `SLURM_JWT=${old}\n`);
    const s = await serve({ auth: { valid: (t) => hs256Valid(KEY, t), rejectWith: 401 } });
    const src = counting(tokenFile({ path }));
    const c = client(s, { tokenSource: src });
    // A sidecar refreshes the file after the first rejection.
    s.fault('/openapi/v3', { kind: 'status', status: 401 }, 1);
    writeFileSync(path, `SLURM_JWT=${fresh}\n`);
    const r = await c.nodes();
    expect(orThrow(r).items).toHaveLength(10);
    expect(src.invalidations).toBe(1);
    expect(s.requests.at(-1)?.headers['x-slurm-user-token']).toBe(fresh);
    expect(s.requests.at(-1)?.headers['x-slurm-user-name']).toBe('root');
  });

  it.each([401, 500] as const)(
    'a rejected signed token (HTTP %s; 500 is how 22.05 answers) → re-signed once with the rotated key',
    async (rejectWith) => {
      const dir = tmp();
      const keyFile = join(dir, 'jwt_hs256.key');
      const oldKey = Buffer.from('the-old-key-that-slurmctld-dropped');
      writeFileSync(keyFile, oldKey);
      const s = await serve({ auth: { valid: (t) => hs256Valid(KEY, t), rejectWith } });
      const src = counting(keyFileSigner({ keyFile, user: 'slurm', lifetimeSec: 600 }));
      const c = client(s, { tokenSource: src });
      await src.headers(); // caches a token signed with the old key
      writeFileSync(keyFile, KEY);
      const r = await c.jobs();
      expect(orThrow(r).items).toHaveLength(10);
      expect(src.invalidations).toBe(1);
      const sent = s.requests.at(-1)?.headers['x-slurm-user-token'] as string;
      const { payload } = await jwtVerify(sent, KEY, { algorithms: ['HS256'] });
      expect(payload.sun).toBe('slurm');
      expect((payload.exp as number) - (payload.iat as number)).toBe(600);
      expect(payload.exp as number).toBeGreaterThan(NOW);
    },
  );

  it('a token rejected twice is an auth failure after exactly one renewal', async () => {
    for (const rejectWith of [401, 500] as const) {
      const s = await serve({ auth: { valid: () => false, rejectWith } });
      const src = counting(staticToken({ token: 'opaque-token', userName: 'root' }));
      const r = await client(s, { tokenSource: src, apiVersion: 'v0.0.44' }).nodes();
      const f = failureOf(r);
      expect(f.kind, `reject with ${rejectWith}`).toBe('auth');
      expect(f.status).toBe(rejectWith);
      expect(src.invalidations).toBe(1);
      // Discovery fails on auth first: two tries of /openapi/v3, nothing else.
      expect(s.requests.map((q) => q.path)).toEqual(['/openapi/v3', '/openapi/v3']);
    }
  });

  it('403 is an auth failure without renewal or retry', async () => {
    const s = await serve();
    s.fault('/slurm/v0.0.44/diag/', { kind: 'status', status: 403, body: 'Forbidden' });
    const src = counting(noAuth());
    const r = await client(s, { tokenSource: src }).diag();
    expect(failureOf(r)).toMatchObject({ kind: 'auth', status: 403 });
    expect(src.invalidations).toBe(0);
    expect(s.count('/slurm/v0.0.44/diag/')).toBe(1);
  });

  it('a token source that cannot produce a credential is an auth failure, with no request sent', async () => {
    const s = await serve();
    const r = await client(s, { tokenSource: tokenFile({ path: join(tmp(), 'absent') }) }).nodes();
    expect(failureOf(r)).toMatchObject({ kind: 'auth', message: expect.stringMatching(/ENOENT/) });
    expect(s.requests).toHaveLength(0);
  });

  it('recognises Slurm authentication errors', () => {
    expect(isAuthMessage({ error: 'Protocol authentication error', error_number: 1007 })).toBe(true);
    expect(isAuthMessage({ error_number: 6000 })).toBe(true);
    expect(isAuthMessage({ error: 'Invalid authentication credential' })).toBe(true);
    expect(isAuthMessage({ error: 'Unable to contact slurm controller (connect failure)', error_number: 1001 })).toBe(
      false,
    );
  });
});

describe('SlurmClient faults', { timeout: 15_000 }, () => {
  it('404 on the negotiated version → renegotiates once and retries on the new version', async () => {
    const s = await serve({ versions: ['v0.0.44', 'v0.0.43'] });
    const c = client(s);
    expect((await c.nodes()).ok).toBe(true);
    s.versions = ['v0.0.43'];
    const r = await c.nodes();
    expect(r.ok && r.version).toBe('v0.0.43');
    expect(s.requests.map((q) => q.path)).toEqual([
      '/openapi/v3',
      '/slurm/v0.0.44/nodes/',
      '/slurm/v0.0.44/nodes/',
      '/openapi/v3',
      '/slurm/v0.0.43/nodes/',
    ]);
    expect(r.timing.attempts).toBe(3);
    expect(c.current()?.version).toBe('v0.0.43');
  });

  it('a 404 that survives renegotiation is remembered as a missing endpoint, not looped on', async () => {
    const s = await serve();
    s.fault('/slurm/v0.0.44/jobs/', { kind: 'status', status: 404 });
    const c = client(s);
    expect(failureOf(await c.jobs())).toMatchObject({ kind: 'absent', status: 404, absence: 'new' });
    expect(s.count('/slurm/v0.0.44/jobs/')).toBe(2);
    expect(s.count('/openapi/v3')).toBe(2);
    expect(failureOf(await c.jobs())).toMatchObject({ kind: 'absent', absence: 'known' });
    expect(s.requests).toHaveLength(4);
  });

  it('a 404 on one endpoint of a version that serves others: absent at once, one warning, asked again after the wait', async () => {
    const s = await serve();
    s.fault('/slurm/v0.0.44/jobs/', { kind: 'status', status: 404 });
    const { logger, lines } = capture();
    let now = 1_000_000;
    const c = client(s, { logger, now: () => now, absentRetryMs: 600_000 });
    expect((await c.nodes()).ok).toBe(true);
    const first = failureOf(await c.jobs());
    expect(first).toMatchObject({ kind: 'absent', absence: 'new', message: expect.stringMatching(/v0\.0\.44\/jobs/) });
    for (let i = 0; i < 5; i++) expect(failureOf(await c.jobs())).toMatchObject({ kind: 'absent', absence: 'known' });
    // One request for /jobs, no renegotiation, and the nodes endpoint still works.
    expect(s.count('/slurm/v0.0.44/jobs/')).toBe(1);
    expect(s.count('/openapi/v3')).toBe(1);
    expect((await c.nodes()).ok).toBe(true);
    const warned = lines.filter((l) => l.includes('does not serve this endpoint on the negotiated API version'));
    expect(warned).toHaveLength(1);
    expect(JSON.parse(warned[0] as string)).toMatchObject({
      level: 'warn',
      endpoint: 'slurm/jobs',
      api_version: 'v0.0.44',
      path: '/slurm/v0.0.44/jobs/',
    });
    // Still missing when asked again: one request more, no second warning.
    now += 600_000;
    expect(failureOf(await c.jobs())).toMatchObject({ kind: 'absent', absence: 'known' });
    expect(s.count('/slurm/v0.0.44/jobs/')).toBe(2);
    expect(lines.filter((l) => l.includes('does not serve this endpoint on the negotiated API version'))).toHaveLength(
      1,
    );
    // The plugin came back: the next ask after the wait gets the data.
    s.clearFaults();
    now += 599_999;
    expect(failureOf(await c.jobs())).toMatchObject({ kind: 'absent', absence: 'known' });
    now += 1;
    expect((await c.jobs()).ok).toBe(true);
    expect(s.count('/slurm/v0.0.44/jobs/')).toBe(3);
    expect(s.count('/openapi/v3')).toBe(1);
    expect(lines.filter((l) => l.includes('serves this endpoint again'))).toHaveLength(1);
  });

  it('a missing endpoint is asked again at once after a renegotiation', async () => {
    const s = await serve({ versions: ['v0.0.44', 'v0.0.43'] });
    s.fault('/slurm/v0.0.44/jobs/', { kind: 'status', status: 404 });
    const c = client(s, { now: () => 0 });
    expect((await c.nodes()).ok).toBe(true);
    expect(failureOf(await c.jobs())).toMatchObject({ kind: 'absent' });
    expect((await c.negotiate()).ok).toBe(true);
    expect((await c.nodes()).ok).toBe(true);
    expect(failureOf(await c.jobs())).toMatchObject({ kind: 'absent', absence: 'known' });
    expect(s.count('/slurm/v0.0.44/jobs/')).toBe(2);
    expect(s.count('/openapi/v3')).toBe(2);
  });

  it('HTML instead of JSON is a decode failure that names the content type', async () => {
    const s = await serve();
    s.fault('/slurm/v0.0.44/nodes/', { kind: 'html' });
    s.fault('/slurm/v0.0.44/diag/', { kind: 'html' });
    const c = client(s);
    expect(failureOf(await c.nodes())).toMatchObject({
      kind: 'decode',
      decodeKind: 'malformed_json',
      message: expect.stringMatching(/content-type text\/html/),
    });
    expect(failureOf(await c.diag())).toMatchObject({ kind: 'decode', decodeKind: 'malformed_json' });
  });

  it('an HTML 502 from a proxy is retried, then reported with its status', async () => {
    const s = await serve();
    s.fault('/slurm/v0.0.44/nodes/', { kind: 'html', status: 502 });
    const r = await client(s, { retries: 1 }).nodes();
    expect(failureOf(r)).toMatchObject({
      kind: 'http',
      status: 502,
      message: expect.stringMatching(/HTTP 502 \(text\/html\)/),
    });
    expect(s.count('/slurm/v0.0.44/nodes/')).toBe(2);
  });

  it('truncated JSON is a malformed_json decode failure, not retried', async () => {
    const s = await serve();
    s.fault('/slurm/v0.0.44/jobs/', { kind: 'truncated' });
    const r = await client(s).jobs();
    expect(failureOf(r)).toMatchObject({
      kind: 'decode',
      decodeKind: 'malformed_json',
      message: expect.stringMatching(/truncated JSON/),
    });
    expect(s.count('/slurm/v0.0.44/jobs/')).toBe(1);
  });

  it("an errors[] envelope is an api_errors failure naming Slurm's messages", async () => {
    const s = await serve();
    s.fault('/slurm/v0.0.44/jobs/', { kind: 'errors' });
    const f = failureOf(await client(s).jobs());
    expect(f).toMatchObject({ kind: 'api_errors', decodeKind: 'api_errors' });
    expect(f.message).toMatch(/Unable to contact slurm controller/);
    expect(f.errors[0]?.error_number).toBe(1001);
  });

  it('a 500 with non-auth errors[] is an api_errors failure, without renewal or retry', async () => {
    const s = await serve();
    s.fault('/slurm/v0.0.44/jobs/', { kind: 'errors', status: 500 });
    const src = counting(noAuth());
    const f = failureOf(await client(s, { tokenSource: src }).jobs());
    expect(f).toMatchObject({ kind: 'api_errors', status: 500 });
    expect(src.invalidations).toBe(0);
    expect(s.count('/slurm/v0.0.44/jobs/')).toBe(1);
  });

  it('a body over the cap is too_large, naming the cap', async () => {
    const s = await serve();
    s.fault('/slurm/v0.0.44/nodes/', { kind: 'huge', bytes: 2 * 1024 * 1024, contentLength: false });
    const f = failureOf(await client(s, { maxResponseBytes: 1024 * 1024 }).nodes());
    expect(f).toMatchObject({ kind: 'too_large', message: expect.stringMatching(/1048576-byte cap/) });
  });

  it('a hang is a timeout after retries+1 attempts', async () => {
    const s = await serve();
    s.fault('/slurm/v0.0.44/diag/', { kind: 'hang-headers' });
    s.fault('/slurm/v0.0.44/nodes/', { kind: 'hang-body' });
    // Long enough for the discovery to answer on a loaded machine; the hangs never answer.
    const c = client(s, { requestTimeoutMs: 1000, retries: 1 });
    const diag = await c.diag();
    expect(failureOf(diag).kind).toBe('timeout');
    expect(s.count('/slurm/v0.0.44/diag/')).toBe(2);
    expect(diag.timing.attempts).toBe(3); // openapi + 2 tries
    expect(failureOf(await c.nodes()).kind).toBe('timeout');
  });

  it('a server that went away is a network failure; an aborted call is aborted', async () => {
    const s = await serve();
    const c = client(s);
    expect((await c.nodes()).ok).toBe(true);
    s.fault('/slurm/v0.0.44/jobs/', { kind: 'hang-headers' });
    const ac = new AbortController();
    const pending = c.jobs({ signal: ac.signal });
    await waitFor('the hung /jobs request to arrive', () => s.count('/slurm/v0.0.44/jobs/') > 0);
    ac.abort();
    expect(failureOf(await pending).kind).toBe('aborted');
    await s.close();
    servers = [];
    expect(failureOf(await c.diag()).kind).toBe('network');
  });

  it('orThrow turns a failure into a CallError carrying it', async () => {
    const s = await serve();
    s.fault('/slurm/v0.0.44/jobs/', { kind: 'errors' });
    const r = await client(s).jobs();
    expect(() => orThrow(r)).toThrow(CallError);
    try {
      orThrow(r);
    } catch (err) {
      expect((err as CallError).failure.kind).toBe('api_errors');
    }
  });
});

describe('secrets stay out of logs and errors', { timeout: 30_000 }, () => {
  it('no token or key appears in any failure message or logged line', async () => {
    const dir = tmp();
    const keyFile = join(dir, 'jwt_hs256.key');
    writeFileSync(keyFile, KEY);
    const { logger, lines } = capture();
    const messages: string[] = [];
    const scenarios: ((s: FaultServer) => void)[] = [
      (s) => s.fault('/slurm/v0.0.44/nodes/', { kind: 'status', status: 503 }),
      (s) => s.fault('/slurm/v0.0.44/nodes/', { kind: 'hang-body', afterBytes: 10 }),
      (s) => s.fault('/slurm/v0.0.44/nodes/', { kind: 'html' }),
      (s) => s.fault('/slurm/v0.0.44/nodes/', { kind: 'errors', status: 500 }),
      (s) => s.fault('/slurm/v0.0.44/nodes/', { kind: 'reset' }),
      (s) => s.fault('/slurm/v0.0.44/nodes/', { kind: 'huge', bytes: 300_000, contentLength: true }),
      (s) => s.fault('/slurm/v0.0.44/nodes/', { kind: 'status', status: 403 }),
      (s) => {
        s.auth = { valid: () => false, rejectWith: 500 };
      },
      (s) => {
        s.auth = { valid: () => false, rejectWith: 401 };
      },
    ];
    for (const setup of scenarios) {
      const s = await serve();
      setup(s);
      const c = client(s, {
        tokenSource: keyFileSigner({ keyFile, lifetimeSec: 600 }),
        logger,
        requestTimeoutMs: 1000,
        maxResponseBytes: 100_000,
      });
      const r = await c.nodes();
      expect(r.ok).toBe(false);
      if (!r.ok) messages.push(r.failure.message);
      const tokens = new Set(
        s.requests.map((q) => q.headers['x-slurm-user-token']).filter((t): t is string => typeof t === 'string'),
      );
      expect(tokens.size).toBeGreaterThan(0);
      for (const text of [...messages, ...lines]) {
        for (const t of tokens) expect(text).not.toContain(t);
        expect(text).not.toContain(KEY.toString('utf8'));
      }
    }
    expect(lines.length).toBeGreaterThan(5);
    expect(messages).toHaveLength(scenarios.length);
  });
});
