/**
 * HTTPS: a self-signed certificate for 127.0.0.1 made with the openssl CLI, trusted through the
 * transport's CA option (slurmrestd behind TLS) and through a kubeconfig's
 * certificate-authority-data (the Kubernetes API).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubernetesSecretSigner } from '../../../src/cluster/kubernetes/secret-key.js';
import { HttpTransport, NetworkError } from '../../../src/cluster/http/transport.js';

const hasOpenssl = spawnSync('openssl', ['version']).status === 0;
const KEY = Buffer.from('tls-test-signing-key-0123456789abcdef');
const BEARER = 'kube-bearer-for-tls-test';

describe.skipIf(!hasOpenssl)('HTTPS transport', () => {
  let dir: string;
  let cert: Buffer;
  let server: https.Server;
  let url: string;
  let seen: (string | undefined)[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'slurm-otel-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore', timeout: 30_000 },
    );
    cert = readFileSync(join(dir, 'cert.pem'));
    server = https.createServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Secret', data: { 'jwt_hs256.key': KEY.toString('base64') } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 60_000);

  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('trusts a server through the given CA and refuses it otherwise, without retrying', async () => {
    const trusted = new HttpTransport({ server: url, tls: { ca: cert }, timeoutMs: 5_000 });
    expect(JSON.parse(await trusted.getText('/x')).kind).toBe('Secret');
    trusted.close();
    seen = [];
    const untrusted = new HttpTransport({ server: url, timeoutMs: 5_000, attempts: 3, baseDelayMs: 1 });
    const err = await untrusted.getText('/x').catch((e: unknown) => e);
    untrusted.close();
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).code).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
    expect((err as NetworkError).retryable).toBe(false);
    expect(seen).toHaveLength(0);
  });

  it('reads a Secret over HTTPS with a kubeconfig carrying certificate-authority-data', async () => {
    seen = [];
    const cfg = {
      'current-context': 'k',
      clusters: [{ name: 'c', cluster: { server: url, 'certificate-authority-data': cert.toString('base64') } }],
      contexts: [{ name: 'k', context: { cluster: 'c', user: 'u', namespace: 'slurm' } }],
      users: [{ name: 'u', user: { token: BEARER } }],
    };
    writeFileSync(join(dir, 'kubeconfig'), JSON.stringify(cfg));
    const src = kubernetesSecretSigner({
      access: { kind: 'kubeconfig', path: join(dir, 'kubeconfig') },
      clusterName: 'lab',
    });
    const token = (await src.headers())['X-SLURM-USER-TOKEN'] as string;
    expect((await jwtVerify(token, KEY)).payload.sun).toBe('root');
    expect(seen).toEqual([`Bearer ${BEARER}`]);
  });
});
