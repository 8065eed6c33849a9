import { describe, expect, it } from 'vitest';
import * as v0038 from '../../../../src/cluster/api/decode/decode-v0038.js';
import * as v004x from '../../../../src/cluster/api/decode/decode-v004x.js';
import {
  compareVersionsDesc,
  decoderFor,
  familyOf,
  normalizeVersion,
  parseServedVersions,
  pickVersion,
  SUPPORTED_VERSIONS,
} from '../../../../src/cluster/api/decode/versions.js';
import { BUILT_VERSIONS, built, readJson } from '../../fixtures.js';

describe('parseServedVersions', () => {
  it('reads a real 22.05 /openapi/v3 document (paths without trailing slash)', () => {
    const served = parseServedVersions(readJson('recorded', 'slurm-22.05', 'dbd', 'openapi-v3.json'));
    expect(served).toEqual({ slurm: ['v0.0.38', 'v0.0.37', 'v0.0.36'], slurmdb: ['v0.0.38', 'v0.0.37', 'v0.0.36'] });
  });

  it('sees no slurmdb versions when slurmdbd plugins are not loaded', () => {
    const served = parseServedVersions(readJson('recorded', 'slurm-22.05', 'no-dbd', 'openapi-v3.json'));
    expect(served.slurmdb).toEqual([]);
    expect(served.slurm).toHaveLength(3);
  });

  it('reads generated v0.0.4x specs', () => {
    for (const v of BUILT_VERSIONS)
      expect(parseServedVersions(readJson('openapi', `${v}.json`))).toEqual({ slurm: [v], slurmdb: [v] });
  });

  it('merges several plugins, sorts newest first and ignores junk', () => {
    const doc = {
      paths: {
        '/slurm/v0.0.41/nodes/': {},
        '/slurm/v0.0.43/jobs/': {},
        '/slurm/v0.0.42/diag/': {},
        '/slurmdb/v0.0.43/jobs/': {},
        '/openapi/v3': {},
        '/slurmfoo/v0.0.44/x': {},
        '/slurm/latest/nodes': {},
      },
    };
    expect(parseServedVersions(doc)).toEqual({ slurm: ['v0.0.43', 'v0.0.42', 'v0.0.41'], slurmdb: ['v0.0.43'] });
  });

  it('reads static specs that put the prefix in servers[]', () => {
    expect(parseServedVersions({ servers: [{ url: '/slurm/v0.0.38/' }], paths: { '/nodes/': {} } }).slurm).toEqual([
      'v0.0.38',
    ]);
  });

  it('returns nothing for things that are not OpenAPI documents', () => {
    for (const doc of [null, 'html', 42, [], {}, { paths: [] }])
      expect(parseServedVersions(doc)).toEqual({ slurm: [], slurmdb: [] });
  });
});

describe('pickVersion', () => {
  it('prefers the newest version both sides know', () => {
    expect(pickVersion(['v0.0.41', 'v0.0.43', 'v0.0.42'])).toEqual({ ok: true, version: 'v0.0.43' });
    expect(pickVersion(['v0.0.44', 'v0.0.46', 'v0.0.45'])).toEqual({ ok: true, version: 'v0.0.45' });
    expect(pickVersion(['v0.0.36', 'v0.0.37', 'v0.0.38'])).toEqual({ ok: true, version: 'v0.0.38' });
  });

  it('explains why nothing fits', () => {
    const none = pickVersion([]);
    expect(none.ok).toBe(false);
    expect(!none.ok && none.error).toMatch(/advertises no API versions/);
    const tooNew = pickVersion(['v0.0.46', 'v0.0.47']);
    expect(!tooNew.ok && tooNew.error).toMatch(
      /no common API version: slurmrestd serves v0.0.46, v0.0.47; this agent understands v0.0.36–v0.0.45/,
    );
  });

  it('honours an override that is supported and served', () => {
    expect(pickVersion(['v0.0.44', 'v0.0.43'], 'v0.0.43')).toEqual({ ok: true, version: 'v0.0.43' });
    expect(pickVersion(['v0.0.44'], '0.0.44')).toEqual({ ok: true, version: 'v0.0.44' });
    // Discovery failed: the operator's word is all there is.
    expect(pickVersion([], 'v0.0.41')).toEqual({ ok: true, version: 'v0.0.41' });
  });

  it('rejects bad overrides with the reason', () => {
    const notServed = pickVersion(['v0.0.44', 'v0.0.43'], 'v0.0.41');
    expect(!notServed.ok && notServed.error).toBe(
      'API version v0.0.41 was requested but slurmrestd serves only v0.0.44, v0.0.43',
    );
    const unsupported = pickVersion(['v0.0.46'], 'v0.0.46');
    expect(!unsupported.ok && unsupported.error).toMatch(/v0.0.46 is not supported by this agent/);
    const garbage = pickVersion(['v0.0.44'], 'latest');
    expect(!garbage.ok && garbage.error).toMatch(/"latest" is not an API version/);
  });
});

describe('version helpers', () => {
  it('orders versions numerically, not as strings', () => {
    expect(['v0.0.9', 'v0.0.40', 'v0.0.100', 'junk', 'v0.1.0'].sort(compareVersionsDesc)).toEqual([
      'v0.1.0',
      'v0.0.100',
      'v0.0.40',
      'v0.0.9',
      'junk',
    ]);
  });

  it('normalises version spellings', () => {
    expect(normalizeVersion('0.0.44')).toBe('v0.0.44');
    expect(normalizeVersion(' v0.0.41 ')).toBe('v0.0.41');
    expect(normalizeVersion('v0.0')).toBeUndefined();
  });

  it('maps every supported version to its decoder family', () => {
    expect(SUPPORTED_VERSIONS.map((v) => [v, familyOf(v)])).toEqual([
      ['v0.0.45', 'v004x'],
      ['v0.0.44', 'v004x'],
      ['v0.0.43', 'v004x'],
      ['v0.0.42', 'v004x'],
      ['v0.0.41', 'v004x'],
      ['v0.0.40', 'v004x'],
      ['v0.0.39', 'v004x'],
      ['v0.0.38', 'v0038'],
      ['v0.0.37', 'v0038'],
      ['v0.0.36', 'v0038'],
    ]);
    expect(decoderFor('v0.0.44').decodeNodes).toBe(v004x.decodeNodes);
    expect(decoderFor('v0.0.36').decodeJob).toBe(v0038.decodeJob);
  });

  it('a family decodes the fixtures of its versions', () => {
    for (const v of BUILT_VERSIONS) expect(decoderFor(v).decodeNodes(built(v, 'nodes.json')).ok).toBe(true);
  });
});
