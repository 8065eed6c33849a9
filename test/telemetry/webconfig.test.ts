import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_HTTP_LIMITS, serve, textBody, type Endpoint } from '../../src/telemetry/http.js';
import {
  BasicAuth,
  checksQueued,
  comparisonsInFlight,
  loadWebConfig,
  stopPasswordWorker,
  verifyOnWorker,
} from '../../src/telemetry/webconfig.js';
import { scrapeOnce } from '../support/http-attacks.js';
import { tmpDir } from '../support/tmp.js';
import { findTool, shouldRun, toolPath, waitFor } from '../support/tools.js';

const openssl = findTool('openssl', 'openssl');
let endpoint: Endpoint | undefined;
afterEach(async () => {
  await endpoint?.close();
  endpoint = undefined;
});

function selfSigned(dir: string): { cert: string; key: string } {
  const cert = path.join(dir, 'server.crt');
  const key = path.join(dir, 'server.key');
  execFileSync(
    toolPath(openssl),
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

function get(
  url: string,
  ca: Buffer | undefined,
  auth?: string,
): Promise<{ status: number; body: string; authenticate?: string }> {
  return new Promise((resolve, reject) => {
    const headers = auth ? { authorization: `Basic ${Buffer.from(auth).toString('base64')}` } : undefined;
    https
      .get(url, { ca, headers }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body, authenticate: res.headers['www-authenticate'] }),
        );
      })
      .on('error', reject);
  });
}

describe.runIf(shouldRun(openssl))('web config: TLS and basic auth', () => {
  it('serves over TLS to a client that trusts the certificate and checks bcrypt passwords', async () => {
    const dir = tmpDir();
    selfSigned(dir);
    fs.writeFileSync(
      path.join(dir, 'web.yml'),
      `tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  prom: ${bcrypt.hashSync('s3cret', 4)}\n`,
    );
    const config = loadWebConfig(path.join(dir, 'web.yml'));
    endpoint = await serve({ host: '127.0.0.1', port: 0 }, { '/metrics': () => textBody('up 1\n') }, undefined, config);
    expect(endpoint.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const ca = fs.readFileSync(path.join(dir, 'server.crt'));
    expect(await get(`${endpoint.url}/metrics`, ca, 'prom:s3cret')).toMatchObject({ status: 200, body: 'up 1\n' });
    expect(await get(`${endpoint.url}/metrics`, ca, 'prom:wrong')).toMatchObject({
      status: 401,
      authenticate: 'Basic realm="slurm-otel"',
    });
    expect(await get(`${endpoint.url}/metrics`, ca, 'other:s3cret')).toMatchObject({ status: 401 });
    expect(await get(`${endpoint.url}/metrics`, ca)).toMatchObject({ status: 401 });
    // A client that does not trust the certificate refuses the connection.
    await expect(get(`${endpoint.url}/metrics`, undefined, 'prom:s3cret')).rejects.toThrow(/self[- ]signed/i);
  });

  it('closes a connection that never starts its TLS handshake', async () => {
    const dir = tmpDir();
    selfSigned(dir);
    fs.writeFileSync(
      path.join(dir, 'web.yml'),
      'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n',
    );
    const limits = {
      ...DEFAULT_HTTP_LIMITS,
      headersTimeoutMs: 300,
      requestTimeoutMs: 600,
      writeTimeoutMs: 500,
      keepAliveTimeoutMs: 300,
      idleTimeoutMs: 500,
      handshakeTimeoutMs: 500,
    };
    endpoint = await serve(
      { host: '127.0.0.1', port: 0 },
      { '/metrics': () => textBody('up 1\n') },
      undefined,
      loadWebConfig(path.join(dir, 'web.yml')),
      limits,
    );
    const socket = net.connect(endpoint.port, '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('close', resolve));
    expect(await endpoint.connections()).toBe(0);
  });
});

describe('web config file', () => {
  const write = (text: string) => {
    const file = path.join(tmpDir(), 'web.yml');
    fs.writeFileSync(file, text);
    return file;
  };

  it.each([
    ['basic_auth_users:\n  a: plaintext\n', /not a bcrypt hash/],
    ['tls_server_config:\n  key_file: k\n', /cert_file is required/],
    ['tls_server_config:\n  cert_file: nope.crt\n  key_file: nope.key\n', /cannot read cert_file nope.crt: ENOENT/],
    [
      'tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: Sometimes\n',
      /client_auth_type "Sometimes"/,
    ],
    ['basic_auth: {}\n', /unknown key\(s\) basic_auth/],
    ['- a\n- b\n', /expected a mapping/],
    ['a: [\n', /web config/],
  ])('rejects %j with a clear error', (text, message) => {
    expect(() => loadWebConfig(write(text))).toThrow(message);
  });

  it('accepts an empty file as "no TLS, no auth"', () => {
    expect(loadWebConfig(write(''))).toEqual({ tls: undefined, users: new Map() });
  });

  it('remembers a verified header but still rejects a changed password', async () => {
    const auth = new BasicAuth(new Map([['u', bcrypt.hashSync('pw', 4)]]));
    const h = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;
    expect(await auth.check(h('u:pw'))).toBe('ok');
    expect(await auth.check(h('u:pw'))).toBe('ok');
    expect(await auth.check(h('u:pw2'))).toBe('denied');
    expect(await auth.check('Bearer x')).toBe('denied');
    expect(await auth.check(undefined)).toBe('denied');
  });
});

describe('basic auth under attack', () => {
  const h = (s: string, scheme = 'Basic') => `${scheme} ${Buffer.from(s).toString('base64')}`;
  const hash = bcrypt.hashSync('pw', 6);

  /** The real bcrypt, spied on. */
  function spy(): { verify: (p: string, hash: string) => Promise<boolean>; calls: string[] } {
    const calls: string[] = [];
    return { calls, verify: async (p, hashed) => (calls.push(hashed), bcrypt.compareSync(p, hashed)) };
  }

  it('takes the scheme in any case', async () => {
    const auth = new BasicAuth(new Map([['u', hash]]));
    expect(await auth.check(h('u:pw', 'basic'))).toBe('ok');
    expect(await auth.check(h('u:pw', 'BASIC'))).toBe('ok');
  });

  it("compares an unknown user with a dummy hash of the known users' cost, and never lets it in", async () => {
    const s = spy();
    const auth = new BasicAuth(new Map([['u', hash]]), { verify: s.verify });
    expect(await auth.check(h('nobody:pw'), 'a')).toBe('denied');
    expect(await auth.check(h('u:wrong'), 'a')).toBe('denied');
    expect(s.calls).toHaveLength(2);
    expect(s.calls[0]).not.toBe(hash);
    expect(bcrypt.getRounds(s.calls[0] as string)).toBe(bcrypt.getRounds(hash));
    // The dummy hash is well formed: the worker compares it (and finds no match) instead of failing fast.
    expect(await verifyOnWorker('pw', s.calls[0] as string)).toBe(false);
    expect(await verifyOnWorker('pw', hash)).toBe(true);
  });

  it('runs bcrypt once per user and password: later checks come from the cache', async () => {
    const s = spy();
    const auth = new BasicAuth(new Map([['u', hash]]), { verify: s.verify });
    for (let i = 0; i < 3; i++) expect(await auth.check(h('u:pw'))).toBe('ok');
    expect(s.calls).toHaveLength(1);
    expect(await auth.check(h('u:pw2'))).toBe('denied');
    expect(s.calls).toHaveLength(2);
  });

  it('answers "limited" without bcrypt after too many failures from one address, until the window ends', async () => {
    const s = spy();
    let now = 0;
    const auth = new BasicAuth(new Map([['u', hash]]), {
      verify: s.verify,
      maxFailures: 3,
      failureWindowMs: 60_000,
      now: () => now,
    });
    for (let i = 0; i < 3; i++) expect(await auth.check(h('u:guess' + i), '10.0.0.1')).toBe('denied');
    expect(await auth.check(h('u:guess9'), '10.0.0.1')).toBe('limited');
    expect(await auth.check(h('u:pw'), '10.0.0.1')).toBe('limited');
    expect(s.calls).toHaveLength(3);
    // Another address is not affected; a cached password is still accepted from the limited one.
    expect(await auth.check(h('u:pw'), '10.0.0.2')).toBe('ok');
    expect(await auth.check(h('u:pw'), '10.0.0.1')).toBe('ok');
    now = 60_000;
    expect(await auth.check(h('u:guess10'), '10.0.0.1')).toBe('denied');
  });

  it('queues at most 32 comparisons for the worker; later clients are told to retry', async () => {
    const auth = new BasicAuth(new Map([['u', bcrypt.hashSync('pw', 4)]]));
    const verdicts = await Promise.all(
      Array.from({ length: 40 }, (_, i) => auth.check(h(`u:guess${i}`), `10.0.1.${i}`)),
    );
    expect(verdicts.filter((v) => v === 'denied')).toHaveLength(32);
    expect(verdicts.filter((v) => v === 'limited')).toHaveLength(8);
    expect(await auth.check(h('u:pw'), '10.0.2.1')).toBe('ok');
  });

  it('serves 429 to a client guessing passwords', async () => {
    const security = { users: new Map([['u', hash]]), auth: { maxFailures: 2 } };
    endpoint = await serve(
      { host: '127.0.0.1', port: 0 },
      { '/metrics': () => textBody('up 1\n') },
      undefined,
      security,
    );
    const status = async (auth: string) =>
      (await fetch(`${endpoint?.url}/metrics`, { headers: { authorization: auth } })).status;
    expect([await status(h('u:a')), await status(h('u:b')), await status(h('u:c'))]).toEqual([401, 401, 429]);
  });

  it('serves an authorised scrape while wrong passwords are being compared', async () => {
    // A well-formed hash of the highest cost: comparing with it takes days, so the wrong passwords
    // are still being compared (one on the worker, the others waiting their turn) whenever the
    // authorised scrape comes, however loaded the machine. Every check costs what the costliest
    // user's does, so the endless user has an endpoint of its own; both share the one password
    // worker. The wrong passwords come from four addresses, as one address holds two places at most.
    const endless = `$2b$31$${'dummysaltdummysaltdumm'}${'x'.repeat(31)}`;
    const routes = { '/metrics': () => textBody('up 1\n') };
    endpoint = await serve({ host: '127.0.0.1', port: 0 }, routes, undefined, {
      users: new Map([['u', bcrypt.hashSync('pw', 4)]]),
    });
    const slow = await serve({ host: '127.0.0.1', port: 0 }, routes, undefined, {
      users: new Map([['slow', endless]]),
    });
    const get = (base: string, auth: string) =>
      fetch(`${base}/metrics`, { headers: { authorization: auth } }).then((r) => r.status);
    const url = endpoint.url;
    try {
      expect(await get(url, h('u:pw'))).toBe(200);
      const settled: Array<number | undefined> = [];
      const wrong = [2, 3, 4, 5].map((i) =>
        scrapeOnce(`${slow.url}/metrics`, `127.0.0.${i}`, { authorization: h(`slow:wrong${i}`) }).then((a) =>
          settled.push(a?.status),
        ),
      );
      try {
        await waitFor(
          'four checks queued, one on the worker',
          () => checksQueued() === 4 && comparisonsInFlight() === 1,
        );
        // bcrypt on the event loop would never answer this one.
        expect(await get(url, h('u:pw'))).toBe(200);
        expect(settled).toEqual([]);
        expect(comparisonsInFlight()).toBe(1);
      } finally {
        await stopPasswordWorker();
      }
      // A worker that dies fails the comparison it held, and those waiting for it: denied, never let through.
      await Promise.all(wrong);
      expect(settled).toEqual([401, 401, 401, 401]);
    } finally {
      await slow.close();
    }
  });
});

describe.runIf(shouldRun(openssl))('TLS client certificates (exporter-toolkit semantics)', () => {
  const run = (args: string[]) => execFileSync(toolPath(openssl), args, { stdio: 'ignore' });

  /** A CA, a server and a client certificate from it, one from a rogue CA, one self-signed. */
  function pki(dir: string) {
    const p = (n: string) => path.join(dir, n);
    for (const ca of ['ca', 'rogue'])
      run([
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        p(`${ca}.key`),
        '-out',
        p(`${ca}.crt`),
        '-days',
        '1',
        '-subj',
        `/CN=${ca}`,
      ]);
    const issue = (name: string, ca: string, ext: string) => {
      run([
        'req',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        p(`${name}.key`),
        '-out',
        p(`${name}.csr`),
        '-subj',
        `/CN=${name}`,
      ]);
      fs.writeFileSync(p(`${name}.ext`), ext);
      run([
        'x509',
        '-req',
        '-in',
        p(`${name}.csr`),
        '-CA',
        p(`${ca}.crt`),
        '-CAkey',
        p(`${ca}.key`),
        '-CAcreateserial',
        '-out',
        p(`${name}.crt`),
        '-days',
        '1',
        '-extfile',
        p(`${name}.ext`),
      ]);
    };
    issue('server', 'ca', 'subjectAltName=IP:127.0.0.1\n');
    issue('client', 'ca', 'extendedKeyUsage=clientAuth\n');
    issue('rogueclient', 'rogue', 'extendedKeyUsage=clientAuth\n');
    run([
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      p('self.key'),
      '-out',
      p('self.crt'),
      '-days',
      '1',
      '-subj',
      '/CN=self',
    ]);
  }

  function request(url: string, dir: string, cert?: string): Promise<number> {
    const read = (n: string) => fs.readFileSync(path.join(dir, n));
    const client = cert ? { cert: read(`${cert}.crt`), key: read(`${cert}.key`) } : {};
    return new Promise((resolve, reject) => {
      https
        .get(url, { ca: read('ca.crt'), ...client, agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('error', reject);
        })
        .on('error', reject);
    });
  }

  async function outcomes(dir: string, clientAuth: string): Promise<Record<string, string>> {
    fs.writeFileSync(
      path.join(dir, 'web.yml'),
      `tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_ca_file: ca.crt\n  client_auth_type: ${clientAuth}\n`,
    );
    endpoint = await serve(
      { host: '127.0.0.1', port: 0 },
      { '/metrics': () => textBody('up 1\n') },
      undefined,
      loadWebConfig(path.join(dir, 'web.yml')),
    );
    const out: Record<string, string> = {};
    for (const cert of ['none', 'client', 'rogueclient', 'self']) {
      out[cert] = await request(`${endpoint.url}/metrics`, dir, cert === 'none' ? undefined : cert).then(
        String,
        () => 'refused',
      );
    }
    await endpoint.close();
    endpoint = undefined;
    return out;
  }

  it('accepts, requires and verifies client certificates as Go does', async () => {
    const dir = tmpDir();
    pki(dir);
    expect(await outcomes(dir, 'RequestClientCert')).toEqual({
      none: '200',
      client: '200',
      rogueclient: '200',
      self: '200',
    });
    expect(await outcomes(dir, 'RequireAnyClientCert')).toEqual({
      none: 'refused',
      client: '200',
      rogueclient: '200',
      self: '200',
    });
    expect(await outcomes(dir, 'VerifyClientCertIfGiven')).toEqual({
      none: '200',
      client: '200',
      rogueclient: 'refused',
      self: 'refused',
    });
    expect(await outcomes(dir, 'RequireAndVerifyClientCert')).toEqual({
      none: 'refused',
      client: '200',
      rogueclient: 'refused',
      self: 'refused',
    });
  });

  it('refuses a client CA without a policy that uses it, and a verifying policy without a CA', () => {
    const dir = tmpDir();
    pki(dir);
    const write = (extra: string) => {
      fs.writeFileSync(
        path.join(dir, 'web.yml'),
        `tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n${extra}`,
      );
      return () => loadWebConfig(path.join(dir, 'web.yml'));
    };
    expect(write('  client_ca_file: ca.crt\n')).toThrow(/client_ca_file is set but client_auth_type is NoClientCert/);
    expect(write('  client_auth_type: VerifyClientCertIfGiven\n')).toThrow(/needs client_ca_file/);
    expect(write('  client_auth_type: RequireClientCert\n')().tls?.clientAuth).toBe('RequireAnyClientCert');
  });
});
