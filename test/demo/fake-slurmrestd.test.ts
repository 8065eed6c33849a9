/**
 * The fake slurmrestd over real HTTP on loopback: discovery, auth, routing, query parameters, and
 * bodies that the agent's streaming decoder reads without skipping anything.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import { decodeAssociation, decodeQos } from '../../src/cluster/api/decode-limits.js';
import { endpointPath, ENDPOINTS } from '../../src/cluster/api/paths.js';
import { decodeListStream } from '../../src/cluster/api/stream-decode.js';
import { decoderFor, parseServedVersions } from '../../src/cluster/api/versions.js';
import type { ItemResult } from '../../src/cluster/model.js';
import { FakeCluster } from '../../src/demo/fake-cluster.js';
import { startFakeSlurmrestd } from '../../src/demo/fake-slurmrestd.js';
import type { FakeSlurmrestd } from '../../src/demo/fake-slurmrestd.js';
import { renderText } from '../../src/demo/slurm-render.js';
import { V0038_RENDERERS } from '../support/slurm-render-v0038.js';
import { knownTruth } from '../support/fake-cluster-truth.js';

const TOKEN = 'eyJhbGciOiJIUzI1NiJ9.e30.fake';
const auth = { 'X-SLURM-USER-TOKEN': TOKEN };

async function get(server: FakeSlurmrestd, path: string, headers: Record<string, string> = auth): Promise<Response> {
  return fetch(`${server.url}${path}`, { headers });
}

describe('fake slurmrestd', () => {
  const cluster = new FakeCluster({ nodes: 8, seed: 21 });
  let server: FakeSlurmrestd;

  beforeAll(async () => {
    cluster.advance(30 * 60_000);
    server = await startFakeSlurmrestd({ cluster, versions: ['v0.0.44', 'v0.0.43'], token: TOKEN });
  });
  afterAll(async () => server.close());

  it('listens on loopback', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('advertises exactly the served versions in /openapi/v3, and follows setVersions', async () => {
    const doc = (await (await get(server, '/openapi/v3')).json()) as unknown;
    expect(parseServedVersions(doc)).toEqual({ slurm: ['v0.0.44', 'v0.0.43'], slurmdb: ['v0.0.44', 'v0.0.43'] });
    server.setVersions(['v0.0.45']);
    try {
      const after = (await (await get(server, '/openapi.json')).json()) as unknown;
      expect(parseServedVersions(after)).toEqual({ slurm: ['v0.0.45'], slurmdb: ['v0.0.45'] });
      expect((await get(server, '/slurm/v0.0.44/nodes/')).status).toBe(404);
      expect((await get(server, '/slurm/v0.0.45/nodes/')).status).toBe(200);
    } finally {
      server.setVersions(['v0.0.44', 'v0.0.43']);
    }
  });

  it('answers 401 without a token, 500 with errors[] for a wrong one, 200 for the right one in either header', async () => {
    expect((await get(server, '/slurm/v0.0.44/diag/', {})).status).toBe(401);
    const wrong = await get(server, '/slurm/v0.0.44/diag/', { 'X-SLURM-USER-TOKEN': 'nope' });
    expect(wrong.status).toBe(500);
    expect(((await wrong.json()) as { errors: unknown[] }).errors.length).toBe(1);
    expect((await get(server, '/slurm/v0.0.44/diag/')).status).toBe(200);
    expect((await get(server, '/slurm/v0.0.44/diag/', { Authorization: `Bearer ${TOKEN}` })).status).toBe(200);
  });

  it('404 for versions not served and unknown paths; 405 for other methods', async () => {
    for (const p of [
      '/slurm/v0.0.42/jobs/',
      '/slurm/v0.0.99/jobs/',
      '/slurm/v0.0.44/ping/',
      '/slurmdb/v0.0.44/diag/',
      '/slurm/v0.0.44/qos/',
      '/',
    ]) {
      expect((await get(server, p)).status, p).toBe(404);
    }
    expect((await fetch(`${server.url}/slurm/v0.0.44/jobs/`, { method: 'POST', headers: auth })).status).toBe(405);
  });

  it('serves every path the agent requests, spelt as it spells them', async () => {
    for (const ep of Object.values(ENDPOINTS)) {
      const path = endpointPath(ep.api, 'v0.0.44', ep.name);
      expect((await get(server, path)).status, path).toBe(200);
    }
  });

  it('serves the renderer’s bytes, with or without the trailing slash', async () => {
    const expected = renderText(cluster, 'v0.0.43', 'nodes');
    expect(await (await get(server, '/slurm/v0.0.43/nodes/')).text()).toBe(expected);
    expect(await (await get(server, '/slurm/v0.0.43/nodes')).text()).toBe(expected);
  });

  /** Streams `path` through the agent's streaming decoder; returns the item count, throws on failure or skips. */
  async function streamed<T>(path: string, key: string, decodeItem: (e: unknown) => ItemResult<T>): Promise<number> {
    const res = await get(server, path);
    const decoded = await decodeListStream(
      Readable.fromWeb(res.body as never) as AsyncIterable<Uint8Array>,
      key,
      decodeItem,
    );
    if (!decoded.ok) throw new Error(`${path}: ${decoded.message}`);
    expect(decoded.skipped, path).toBe(0);
    expect(decoded.meta.slurm_release).toBe('25.11.2');
    return decoded.items.length;
  }

  it('every endpoint streams into the agent’s streaming decoder with nothing skipped', async () => {
    const d = decoderFor('v0.0.44');
    const truth = knownTruth(cluster);
    expect(await streamed('/slurm/v0.0.44/jobs/', 'jobs', d.decodeJob)).toBe(truth.jobs.length);
    expect(await streamed('/slurm/v0.0.44/nodes/', 'nodes', d.decodeNode)).toBe(truth.nodes.length);
    expect(await streamed('/slurmdb/v0.0.44/jobs/', 'jobs', d.decodeAccountingJob)).toBe(truth.accountingJobs.length);
    expect(d.decodeDiag(await (await get(server, '/slurm/v0.0.44/diag/')).json()).ok).toBe(true);
    expect(await streamed('/slurmdb/v0.0.44/qos/', 'qos', decodeQos)).toBe(cluster.view().qos.length);
    expect(await streamed('/slurmdb/v0.0.44/associations/', 'associations', decodeAssociation)).toBe(
      cluster.view().associations.length,
    );
  });

  it('slurmdbd: uts<epoch> times filter, a bare integer is refused, another cluster finds nothing', async () => {
    const now = Math.floor(cluster.now / 1000);
    const all = (await (await get(server, '/slurmdb/v0.0.44/jobs/')).json()) as { jobs: unknown[] };
    const recent = (await (
      await get(server, `/slurmdb/v0.0.44/jobs/?start_time=uts${now - 60}&end_time=uts${now + 300}&skip_steps=true`)
    ).json()) as { jobs: unknown[] };
    expect(recent.jobs.length).toBeGreaterThan(0);
    expect(recent.jobs.length).toBeLessThan(all.jobs.length);
    expect((await get(server, `/slurmdb/v0.0.44/jobs/?start_time=${now - 60}`)).status).toBe(400);
    const other = (await (await get(server, '/slurmdb/v0.0.44/jobs/?cluster=elsewhere')).json()) as { jobs: unknown[] };
    expect(other.jobs).toEqual([]);
  });

  it('counts requests per path', () => {
    expect(server.requests.get('/slurm/v0.0.44/diag/')).toBeGreaterThanOrEqual(5);
    expect(server.requests.get('/openapi/v3')).toBe(1);
  });
});

describe('fake slurmrestd options', () => {
  it('advances the cluster to the clock before each request', async () => {
    const cluster = new FakeCluster({ seed: 4 });
    let clock = cluster.now;
    const server = await startFakeSlurmrestd({ cluster, versions: ['v0.0.44'], clock: () => clock });
    try {
      const reqTime = async () =>
        (
          (await (await get(server, '/slurm/v0.0.44/diag/', {})).json()) as {
            statistics: { req_time: { number: number } };
          }
        ).statistics.req_time.number;
      const before = await reqTime();
      clock += 3_600_000;
      expect(await reqTime()).toBe(before + 3600);
      expect(cluster.now).toBe(clock);
    } finally {
      await server.close();
    }
  });

  it('v0.0.45 answers 304 to update_time when no node changed, v0.0.44 ignores it', async () => {
    const cluster = new FakeCluster({ seed: 4 });
    const server = await startFakeSlurmrestd({ cluster, versions: ['v0.0.45', 'v0.0.44'] });
    try {
      const since = cluster.nodesUpdatedAt;
      const res = await get(server, `/slurm/v0.0.45/nodes/?update_time=${since}`, {});
      expect(res.status).toBe(304);
      expect(await res.text()).toBe('');
      expect((await get(server, `/slurm/v0.0.44/nodes/?update_time=${since}`, {})).status).toBe(200);
      expect((await get(server, `/slurm/v0.0.45/nodes/?update_time=${since - 1}`, {})).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('with pretty, streams slurmrestd-printed bodies that the streaming decoder reads whole', async () => {
    const cluster = new FakeCluster({ seed: 4 });
    const server = await startFakeSlurmrestd({ cluster, versions: ['v0.0.45'], pretty: true });
    try {
      const text = await (await get(server, '/slurm/v0.0.45/jobs/', {})).text();
      expect(text.startsWith('{\n  "jobs": [\n    {\n      "')).toBe(true);
      expect(text).toBe(renderText(cluster, 'v0.0.45', 'jobs', { pretty: true }));
      const decoded = await decodeListStream(
        Readable.from([Buffer.from(text)]),
        'jobs',
        decoderFor('v0.0.45').decodeJob,
      );
      expect(decoded).toMatchObject({ ok: true, skipped: 0 });
      if (decoded.ok) expect(decoded.items.length).toBe(cluster.view().jobs.length);
    } finally {
      await server.close();
    }
  });

  it('22.05 style: v0.0.38 paths without the trailing slash, Nothing found from slurmdbd', async () => {
    const cluster = new FakeCluster({ seed: 4, workload: 'none' });
    const server = await startFakeSlurmrestd({ cluster, versions: ['v0.0.38'], renderers: V0038_RENDERERS });
    try {
      const doc = (await (await get(server, '/openapi/v3', {})).json()) as { paths: Record<string, unknown> };
      expect(Object.keys(doc.paths)).toContain('/slurm/v0.0.38/nodes');
      const body = (await (await get(server, '/slurmdb/v0.0.38/jobs', {})).json()) as unknown;
      const decoded = decoderFor('v0.0.38').decodeAccountingJobs(body);
      expect(decoded).toMatchObject({ ok: true, items: [], errors: [{ error_number: 9003 }] });
    } finally {
      await server.close();
    }
  });

  it('refuses to serve a version it has no renderer for, at start and on a version change', async () => {
    const cluster = new FakeCluster({ seed: 4, workload: 'none' });
    await expect(startFakeSlurmrestd({ cluster, versions: ['v0.0.44', 'v0.0.38'] })).rejects.toThrow(
      /no renderer for v0\.0\.38/,
    );
    const server = await startFakeSlurmrestd({ cluster, versions: ['v0.0.44'] });
    try {
      expect(() => server.setVersions(['v0.0.38'])).toThrow(/no renderer for v0\.0\.38/);
      expect((await get(server, '/slurm/v0.0.44/nodes/', {})).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('without slurmdbd, no /slurmdb/ paths are advertised or served', async () => {
    const cluster = new FakeCluster({ seed: 4 });
    const server = await startFakeSlurmrestd({ cluster, versions: ['v0.0.44'], slurmdbd: false });
    try {
      const doc = (await (await get(server, '/openapi/v3', {})).json()) as unknown;
      expect(parseServedVersions(doc).slurmdb).toEqual([]);
      expect((await get(server, '/slurmdb/v0.0.44/jobs/', {})).status).toBe(404);
    } finally {
      await server.close();
    }
  });

  it('answers 404 for the chosen paths, with or without the trailing slash, and follows setMissing', async () => {
    const cluster = new FakeCluster({ seed: 4 });
    const server = await startFakeSlurmrestd({
      cluster,
      versions: ['v0.0.44'],
      missing: ['/slurm/v0.0.44/licenses/'],
    });
    try {
      expect((await get(server, '/slurm/v0.0.44/licenses/', {})).status).toBe(404);
      expect((await get(server, '/slurm/v0.0.44/licenses', {})).status).toBe(404);
      expect((await get(server, '/slurm/v0.0.44/nodes/', {})).status).toBe(200);
      server.setMissing(['/slurm/v0.0.44/nodes']);
      expect((await get(server, '/slurm/v0.0.44/licenses/', {})).status).toBe(200);
      expect((await get(server, '/slurm/v0.0.44/nodes/', {})).status).toBe(404);
      expect(server.requests.get('/slurm/v0.0.44/licenses/')).toBe(2);
    } finally {
      await server.close();
    }
  });
});
