/**
 * Every path the client requests exists, spelt the same, in Slurm's OpenAPI document of that
 * version (fixtures/slurm/openapi): a trailing slash too many is a path slurmrestd does not list.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { noAuth } from '../../../src/cluster/api/http/auth.js';
import { SlurmClient } from '../../../src/cluster/api/client.js';
import { endpointPath, ENDPOINTS, servedBy } from '../../../src/cluster/api/paths.js';
import { OPENAPI_PATHS } from '../../../src/cluster/api/negotiation.js';
import type { SupportedVersion } from '../../../src/cluster/api/decode/versions.js';
import { FakeCluster } from '../../../src/demo/fake-cluster.js';
import { startFakeSlurmrestd, type FakeSlurmrestd } from '../../../src/demo/fake-slurmrestd.js';
import { RENDER_VERSIONS, type RenderVersion } from '../../../src/demo/slurm-render.js';
import { silentLogger } from '../../support/log.js';
import { V0038_RENDERERS } from '../../support/slurm-render-v0038.js';
import { readJson } from '../fixtures.js';

interface Spec {
  readonly servers?: readonly { readonly url: string }[];
  readonly paths: Record<string, unknown>;
}

/** The paths a version's documents list, in full (v0.0.38's list theirs under a server prefix). */
function specPaths(version: RenderVersion): Set<string> {
  const files = version === 'v0.0.38' ? ['v0.0.38-slurmctld.json', 'v0.0.38-slurmdbd.json'] : [`${version}.json`];
  const out = new Set<string>();
  for (const file of files) {
    const spec = readJson('openapi', file) as Spec;
    const prefix = (spec.servers?.[0]?.url ?? '').replace(/\/$/, '');
    for (const p of Object.keys(spec.paths)) out.add(`${prefix}${p}`);
  }
  return out;
}

/**
 * v0.0.38's static documents end every path with a slash, while the document slurmrestd 22.05
 * serves (and the agent follows) lists them without one; only that version is compared slash-blind.
 */
function listed(version: RenderVersion, path: string): boolean {
  const paths = specPaths(version);
  if (version !== 'v0.0.38') return paths.has(path);
  const bare = (p: string): string => p.replace(/\/$/, '');
  return [...paths].some((p) => bare(p) === bare(path));
}

/** The path of every endpoint the version serves. */
function expectedPaths(version: RenderVersion): string[] {
  return Object.values(ENDPOINTS)
    .filter((ep) => servedBy(ep, version))
    .map((ep) => endpointPath(ep.api, version, ep.name));
}

let server: FakeSlurmrestd | undefined;
let client: SlurmClient | undefined;
afterEach(async () => {
  client?.close();
  await server?.close();
  server = client = undefined;
});

/** Calls every method of the client once against a fake serving only `version`; the paths it received. */
async function requestedPaths(version: RenderVersion): Promise<string[]> {
  const cluster = new FakeCluster({ nodes: 4, seed: 3 });
  server = await startFakeSlurmrestd({ cluster, versions: [version], renderers: V0038_RENDERERS });
  client = new SlurmClient({ server: server.url, tokenSource: noAuth(), logger: silentLogger() });
  const c = client;
  expect((await c.nodes()).ok).toBe(true);
  await Promise.all([
    c.jobs(),
    c.diag(),
    c.partitions(),
    c.licenses(),
    c.reservations(),
    c.shares(),
    c.qos(),
    c.associations(),
    c.accountingJobs({ startTime: 0, endTime: 1 }),
  ]);
  const discovery: ReadonlySet<string> = new Set(OPENAPI_PATHS);
  return [...server.requests.keys()].filter((p) => !discovery.has(p)).sort();
}

describe('the paths the client requests', () => {
  for (const version of RENDER_VERSIONS) {
    it(`are all listed by the OpenAPI document of ${version}`, () => {
      for (const path of expectedPaths(version)) expect(listed(version, path), path).toBe(true);
    });

    it(`are exactly those of the endpoint table, when every method is called (${version})`, async () => {
      expect(await requestedPaths(version)).toEqual(expectedPaths(version).sort());
    });
  }

  it('/shares has no trailing slash, the other v0.0.40+ paths have one', () => {
    const v: SupportedVersion = 'v0.0.44';
    expect(endpointPath('slurm', v, 'shares')).toBe('/slurm/v0.0.44/shares');
    expect(endpointPath('slurmdb', v, 'qos')).toBe('/slurmdb/v0.0.44/qos/');
    expect(specPaths('v0.0.44').has('/slurm/v0.0.44/shares/')).toBe(false);
    expect(listed('v0.0.44', '/slurm/v0.0.44/shares/')).toBe(false);
  });
});
