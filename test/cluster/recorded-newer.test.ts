/**
 * The agent's decoders on what real slurmrestd 24.11 and 26.05 sent (fixtures/slurm/recorded/,
 * `npm run fixtures:real`): the two defects these recordings showed stay fixed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeAssociations } from '../../src/cluster/api/decode-limits.js';
import { decodeShares } from '../../src/cluster/api/decode-shares.js';
import { parseWhole } from '../../src/cluster/api/read-whole.js';

const ROOT = path.join('fixtures', 'slurm', 'recorded');
const read = (release: string, version: string, file: string) =>
  fs.readFileSync(path.join(ROOT, `slurm-${release}`, version, file), 'utf8');

describe('recorded responses of real Slurm 24.11 and 26.05', () => {
  it.each(['v0.0.40', 'v0.0.41'])("24.11's %s /shares, with its bare Infinity, decodes every row", (v) => {
    const text = read('24.11', v, 'shares.json');
    expect(text).toMatch(/"level": Infinity/);
    const d = parseWhole(text, 'shares', decodeShares);
    expect(d.ok).toBe(true);
    if (!d.ok) return;
    expect(d.errors).toEqual([]);
    expect(d.items.map((s) => s.name)).toContain('root');
    // The infinite level is unset, never a number.
    for (const s of d.items) if (s.fairshare_level !== undefined) expect(Number.isFinite(s.fairshare_level)).toBe(true);
  });

  it.each([
    ['24.11', 'v0.0.40'],
    ['24.11', 'v0.0.42'],
    ['26.05', 'v0.0.45'],
  ])('%s %s associations: GrpJobs=50 MaxJobs=20 MaxWall=60 (sacctmgr) read as such', (release, v) => {
    const d = parseWhole(read(release, v, 'slurmdb-associations.json'), 'associations', decodeAssociations);
    expect(d.ok).toBe(true);
    if (!d.ok) return;
    const root = d.items.find((a) => a.account === 'root' && a.user === '');
    expect(root?.values).toMatchObject({ grp_jobs: 50, max_jobs: 20, max_wall_seconds: 3600 });
  });
});
