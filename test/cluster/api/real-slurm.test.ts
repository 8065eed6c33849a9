/**
 * The client against a real Slurm 22.05 slurmrestd on loopback (see test/support/real-slurm.ts):
 * discovery from its /openapi/v3, v0.0.38 paths, tokens signed with the cluster key and made by
 * `scontrol token`, and what a refused token really looks like there.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyFileSigner, scontrolToken, signHs256, staticToken, tokenFile } from '../../../src/cluster/api/http/auth.js';
import { orThrow } from '../../../src/cluster/api/call-result.js';
import { SlurmClient } from '../../../src/cluster/api/client.js';
import { silentLogger } from '../../support/log.js';
import {
  REAL_SLURM_START_TIMEOUT_MS,
  realSlurmGate,
  startRealSlurm,
  type RealSlurm,
} from '../../support/real-slurm.js';

const gate = realSlurmGate();

describe.skipIf(gate.skip)('SlurmClient against real Slurm 22.05', () => {
  let slurm: RealSlurm;
  const clients: SlurmClient[] = [];

  beforeAll(async () => {
    slurm = await startRealSlurm();
  }, REAL_SLURM_START_TIMEOUT_MS);

  afterAll(async () => {
    for (const c of clients) c.close();
    await slurm?.stop();
  }, 90_000);

  function client(tokenSource: ConstructorParameters<typeof SlurmClient>[0]['tokenSource']): SlurmClient {
    const c = new SlurmClient({
      server: slurm.restUrl,
      tokenSource,
      requestTimeoutMs: 10_000,
      retries: 1,
      retryBaseDelayMs: 50,
      logger: silentLogger(),
    });
    clients.push(c);
    return c;
  }

  it('negotiates v0.0.38 and reads nodes, jobs and diag with a self-signed token', async () => {
    const c = client(keyFileSigner({ keyFile: slurm.jwtKeyPath, user: slurm.user, lifetimeSec: 600 }));
    const neg = await c.negotiate();
    expect(neg.ok && neg.negotiated).toMatchObject({ version: 'v0.0.38', source: 'openapi' });
    const nodes = orThrow(await c.nodes());
    expect(nodes.items.length).toBeGreaterThanOrEqual(2);
    expect(nodes.meta.slurm_release).toMatch(/^22\.05\./);
    expect(orThrow(await c.jobs()).skipped).toBe(0);
    expect(orThrow(await c.diag()).items[0]?.server_thread_count).toBeGreaterThan(0);
  });

  it('gets its token from scontrol token', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, SLURM_CONF: slurm.slurmConf };
    delete env.SLURM_JWT;
    const c = client(scontrolToken({ user: slurm.user, lifespanSec: 600, env }));
    expect(orThrow(await c.nodes()).items.length).toBeGreaterThanOrEqual(2);
  });

  it('recovers from the 500 that 22.05 answers to a refused token by renewing the token once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slurm-otel-real-token-'));
    try {
      const path = join(dir, 'token');
      writeFileSync(
        path,
        `SLURM_JWT=${await signHs256(Buffer.from('not-the-cluster-key'), slurm.user, 0, 4_000_000_000)}\n`,
      );
      const file = tokenFile({ path });
      // Stands in for the sidecar that refreshes the file: the good token lands when ours is refused.
      const renewing = {
        ...file,
        invalidate: () => (writeFileSync(path, `SLURM_JWT=${slurm.token}\n`), file.invalidate()),
      };
      const r = await client(renewing).nodes();
      expect(r.ok).toBe(true);
      expect(r.timing.attempts).toBe(3); // openapi, refused nodes, nodes
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports a token signed with the wrong key as an auth failure after one renewal', async () => {
    const bad = staticToken({
      token: slurm.token.replace(/.$/, (ch) => (ch === 'A' ? 'B' : 'A')),
      userName: slurm.user,
    });
    const r = await client(bad).nodes();
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.failure).toMatchObject({ kind: 'auth', status: 500 });
  });
});
