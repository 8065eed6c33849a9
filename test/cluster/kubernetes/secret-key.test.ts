/** The signing key from a Kubernetes Secret, against a fake Kubernetes API on loopback. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { authError, clock, KEY, removeTmpDirs, T0, tmp, tokenOf, verify } from '../../support/auth-fixtures.js';
import { kubernetesSecretSigner, secretNameFor } from '../../../src/cluster/kubernetes/secret-key.js';
import { FakeKube } from './fake-kube.js';

let kubes: FakeKube[] = [];
afterEach(async () => {
  await Promise.all(kubes.map((k) => k.close()));
  removeTmpDirs();
  kubes = [];
});

describe('kubernetesSecretSigner', () => {
  const BEARER = 'sa-token-very-secret';
  const NAME = secretNameFor('soperator');

  async function kube(): Promise<FakeKube> {
    const k = await FakeKube.start({ bearer: BEARER, secrets: { [`slurm/${NAME}`]: { 'jwt_hs256.key': KEY } } });
    kubes.push(k);
    return k;
  }

  function serviceAccountDir(namespace = 'slurm', token = BEARER): string {
    const dir = tmp();
    writeFileSync(join(dir, 'token'), `${token}\n`);
    writeFileSync(join(dir, 'namespace'), namespace);
    return dir;
  }

  it('reads the key in-cluster with the service-account token and signs with it', async () => {
    const k = await kube();
    const src = kubernetesSecretSigner({
      access: { kind: 'in-cluster', apiServer: k.url, serviceAccountDir: serviceAccountDir() },
      clusterName: 'soperator',
      now: clock().now,
    });
    const h = await src.headers();
    expect(await verify(h['X-SLURM-USER-TOKEN'] as string)).toMatchObject({ sun: 'root', exp: T0 + 1800 });
    expect(k.requests).toEqual([
      { path: `/api/v1/namespaces/slurm/secrets/${NAME}`, authorization: `Bearer ${BEARER}` },
    ]);
    await src.headers();
    expect(k.requests).toHaveLength(1);
    src.invalidate();
    await src.headers();
    expect(k.requests).toHaveLength(2);
    expect(src.describe()).toContain(NAME);
    expect(src.describe()).not.toContain(BEARER);
  });

  it('reads a YAML or JSON kubeconfig (context namespace, inline token or tokenFile)', async () => {
    const k = await kube();
    const dir = tmp();
    writeFileSync(join(dir, 'sa-token'), BEARER);
    const yaml = [
      'apiVersion: v1',
      'kind: Config',
      'current-context: lab',
      'clusters:',
      `- name: lab-cluster\n  cluster:\n    server: ${k.url}`,
      'contexts:',
      '- name: other\n  context: {cluster: nowhere, user: nobody}',
      '- name: lab\n  context:\n    cluster: lab-cluster\n    user: agent\n    namespace: slurm',
      'users:',
      '- name: agent\n  user:\n    tokenFile: sa-token',
    ].join('\n');
    writeFileSync(join(dir, 'config.yaml'), yaml);
    const fromYaml = kubernetesSecretSigner({
      access: { kind: 'kubeconfig', path: join(dir, 'config.yaml') },
      clusterName: 'soperator',
      user: 'slurm',
      now: clock().now,
    });
    expect(await verify(await tokenOf(fromYaml))).toMatchObject({ sun: 'slurm' });

    const json = {
      'current-context': 'x',
      clusters: [{ name: 'c', cluster: { server: k.url } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      users: [{ name: 'u', user: { token: BEARER } }],
    };
    writeFileSync(join(dir, 'config.json'), JSON.stringify(json));
    const fromJson = kubernetesSecretSigner({
      access: { kind: 'kubeconfig', path: join(dir, 'config.json') },
      namespace: 'slurm',
      secretName: NAME,
      now: clock().now,
    });
    await verify(await tokenOf(fromJson));
    expect(k.requests.every((r) => r.authorization === `Bearer ${BEARER}`)).toBe(true);
    expect(k.requests).toHaveLength(2);
  });

  it('fails with the Secret and the status, never the bearer or the key', async () => {
    const k = await kube();
    const access = { kind: 'in-cluster', apiServer: k.url, serviceAccountDir: serviceAccountDir() } as const;
    k.forbidden = true;
    const forbidden = await authError(kubernetesSecretSigner({ access, clusterName: 'soperator' }).headers());
    expect(forbidden.message).toMatch(new RegExp(`slurm/${NAME} answered HTTP 403 \\(not allowed`));
    k.forbidden = false;
    const missing = await authError(kubernetesSecretSigner({ access, clusterName: 'other' }).headers());
    expect(missing.message).toMatch(/other-rest-jwt-key answered HTTP 404/);
    const wrongKey = await authError(
      kubernetesSecretSigner({ access, clusterName: 'soperator', dataKey: 'nope' }).headers(),
    );
    expect(wrongKey.message).toMatch(/no data key "nope"/);
    const badBearer = {
      kind: 'in-cluster',
      apiServer: k.url,
      serviceAccountDir: serviceAccountDir('slurm', 'wrong'),
    } as const;
    expect(
      (await authError(kubernetesSecretSigner({ access: badBearer, clusterName: 'soperator' }).headers())).message,
    ).toMatch(/HTTP 401/);
    for (const e of [forbidden, missing, wrongKey]) {
      expect(e.message).not.toContain(BEARER);
      expect(e.message).not.toContain(KEY.toString('base64'));
    }
  });

  it('refuses kubeconfig users it cannot serve', async () => {
    const dir = tmp();
    const cfg = {
      'current-context': 'x',
      clusters: [{ name: 'c', cluster: { server: 'http://127.0.0.1:1' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      users: [{ name: 'u', user: { exec: { command: 'aws' } } }],
    };
    writeFileSync(join(dir, 'config'), JSON.stringify(cfg));
    const src = kubernetesSecretSigner({
      access: { kind: 'kubeconfig', path: join(dir, 'config') },
      clusterName: 'soperator',
    });
    expect((await authError(src.headers())).message).toMatch(/exec and auth-provider users are not supported/);
    const noCtx = kubernetesSecretSigner({
      access: { kind: 'kubeconfig', path: join(dir, 'config'), context: 'missing' },
      clusterName: 'soperator',
    });
    expect((await authError(noCtx.headers())).message).toMatch(/no context named "missing"/);
    expect(() => kubernetesSecretSigner({ access: { kind: 'kubeconfig', path: join(dir, 'config') } })).toThrow(
      /clusterName or secretName/,
    );
  });
});
