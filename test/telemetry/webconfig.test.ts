import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import { afterEach, describe, expect, it } from 'vitest';
import { serve, textBody, type Endpoint } from '../../src/telemetry/http.js';
import { BasicAuth, loadWebConfig } from '../../src/telemetry/webconfig.js';
import { tmpDir } from '../support/tmp.js';
import { findTool, shouldRun, toolPath } from '../support/tools.js';

const openssl = findTool('openssl', 'openssl');
let endpoint: Endpoint | undefined;
afterEach(async () => {
  await endpoint?.close();
  endpoint = undefined;
});

function selfSigned(dir: string): { cert: string; key: string } {
  const cert = path.join(dir, 'server.crt');
  const key = path.join(dir, 'server.key');
  execFileSync(toolPath(openssl), ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  return { cert, key };
}

function get(url: string, ca: Buffer | undefined, auth?: string): Promise<{ status: number; body: string; authenticate?: string }> {
  return new Promise((resolve, reject) => {
    const headers = auth ? { authorization: `Basic ${Buffer.from(auth).toString('base64')}` } : undefined;
    https.get(url, { ca, headers }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, authenticate: res.headers['www-authenticate'] }));
    }).on('error', reject);
  });
}

describe.runIf(shouldRun(openssl))('web config: TLS and basic auth', () => {
  it('serves over TLS to a client that trusts the certificate and checks bcrypt passwords', async () => {
    const dir = tmpDir();
    selfSigned(dir);
    fs.writeFileSync(path.join(dir, 'web.yml'), `tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  prom: ${bcrypt.hashSync('s3cret', 4)}\n`);
    const config = loadWebConfig(path.join(dir, 'web.yml'));
    endpoint = await serve({ host: '127.0.0.1', port: 0 }, { '/metrics': () => textBody('up 1\n') }, undefined, config);
    expect(endpoint.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const ca = fs.readFileSync(path.join(dir, 'server.crt'));
    expect(await get(`${endpoint.url}/metrics`, ca, 'prom:s3cret')).toMatchObject({ status: 200, body: 'up 1\n' });
    expect(await get(`${endpoint.url}/metrics`, ca, 'prom:wrong')).toMatchObject({ status: 401, authenticate: 'Basic realm="slurm-otel"' });
    expect(await get(`${endpoint.url}/metrics`, ca, 'other:s3cret')).toMatchObject({ status: 401 });
    expect(await get(`${endpoint.url}/metrics`, ca)).toMatchObject({ status: 401 });
    // A client that does not trust the certificate refuses the connection.
    await expect(get(`${endpoint.url}/metrics`, undefined, 'prom:s3cret')).rejects.toThrow(/self[- ]signed/i);
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
    ['tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: Sometimes\n', /client_auth_type "Sometimes"/],
    ['basic_auth: {}\n', /unknown key\(s\) basic_auth/],
    ['- a\n- b\n', /expected a mapping/],
    ['a: [\n', /web config/],
  ])('rejects %j with a clear error', (text, message) => {
    expect(() => loadWebConfig(write(text))).toThrow(message);
  });

  it('accepts an empty file as "no TLS, no auth"', () => {
    expect(loadWebConfig(write(''))).toEqual({ tls: undefined, users: new Map() });
  });

  it('remembers a verified header but still rejects a changed password', () => {
    const auth = new BasicAuth(new Map([['u', bcrypt.hashSync('pw', 4)]]));
    const h = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;
    expect(auth.check(h('u:pw'))).toBe(true);
    expect(auth.check(h('u:pw'))).toBe(true);
    expect(auth.check(h('u:pw2'))).toBe(false);
    expect(auth.check('Bearer x')).toBe(false);
    expect(auth.check(undefined)).toBe(false);
  });
});
