/**
 * The fake slurmrestd against what real slurmrestd 24.11 and 26.05 sent (fixtures/slurm/recorded/,
 * re-recorded with `npm run fixtures:real`): for every recorded data parser and endpoint, the
 * fake's body has the recording's shape (the same members where both have the parent, the same
 * JSON types), and with `pretty` it is printed as slurmrestd prints.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseSlurmJson } from '../../src/cluster/api/slurm-json.js';
import { FakeCluster } from '../../src/demo/fake-cluster.js';
import { type Endpoint, isRenderVersion, renderText } from '../../src/demo/slurm-render.js';
import { compareShapes, shapeOf } from '../support/json-shape.js';

const ROOT = path.join('fixtures', 'slurm', 'recorded');
const FILES: Readonly<Record<string, Endpoint>> = {
  'nodes.json': 'nodes',
  'jobs.json': 'jobs',
  'diag.json': 'diag',
  'partitions.json': 'partitions',
  'licenses.json': 'licenses',
  'reservations.json': 'reservations',
  'shares.json': 'shares',
  'slurmdb-jobs.json': 'slurmdb-jobs',
  'slurmdb-qos.json': 'qos',
  'slurmdb-associations.json': 'associations',
};
/** The envelope's meta, errors and warnings are about the request, not the data. */
const envelope = (p: string) => /^(meta|errors|warnings)(\.|\[|$)/.test(p);

/** A fake cluster some hours in: jobs in many states, drained and down nodes. */
function fakeView() {
  const cluster = new FakeCluster({ nodes: 8, seed: 7 });
  for (let i = 0; i < 30; i++) cluster.advance(600_000);
  return cluster.view();
}

/** A number as a member's value, as printed. */
const NUMBER = /(": )(-?\d[\d.eE+-]*)(,?\n)/g;

/** slurmrestd's printing: two-space indents, `\/`; `1.0` for a float that is whole. */
function restyle(doc: unknown): string {
  return JSON.stringify(doc, null, 2).replace(/\//g, '\\/');
}

const recordings = ['slurm-24.11', 'slurm-26.05'].flatMap((release) =>
  fs
    .readdirSync(path.join(ROOT, release))
    .filter(isRenderVersion)
    .flatMap((version) => Object.keys(FILES).map((file) => ({ release, version, file }))),
);

describe('the fake slurmrestd has the shape of real 24.11 and 26.05', () => {
  const view = fakeView();

  it('has recordings of every data parser of both releases', () => {
    const versions = (r: string) => [...new Set(recordings.filter((x) => x.release === r).map((x) => x.version))];
    expect(versions('slurm-24.11')).toEqual(['v0.0.40', 'v0.0.41', 'v0.0.42']);
    expect(versions('slurm-26.05')).toEqual(['v0.0.42', 'v0.0.43', 'v0.0.44', 'v0.0.45']);
  });

  it.each(recordings)('$release $version $file: same members and types', ({ release, version, file }) => {
    if (!isRenderVersion(version)) throw new Error(version);
    const text = fs.readFileSync(path.join(ROOT, release, version, file), 'utf8');
    const recorded = shapeOf(parseSlurmJson(text), envelope);
    const fake = shapeOf(JSON.parse(renderText(view, version, FILES[file] as Endpoint)), envelope);
    expect(compareShapes(recorded, fake)).toEqual({ missing: [], extra: [], types: [] });
  });

  it.each(recordings)('$release $version $file: printed as slurmrestd prints', ({ release, version, file }) => {
    if (!isRenderVersion(version)) throw new Error(version);
    const text = fs.readFileSync(path.join(ROOT, release, version, file), 'utf8');
    // The recording is exactly this style, up to how numbers are spelt (`1.0`, `1.8e+19`) and
    // non-finite ones (24.11's bare `Infinity`).
    const respelt = text.replace(NUMBER, (_m, pre: string, n: string, post: string) => `${pre}${Number(n)}${post}`);
    if (!/\bInfinity\b/.test(text)) expect(respelt).toBe(restyle(JSON.parse(text)));
    const fake = renderText(view, version, FILES[file] as Endpoint, { pretty: true });
    expect(fake).toBe(restyle(JSON.parse(fake)));
  });
});
