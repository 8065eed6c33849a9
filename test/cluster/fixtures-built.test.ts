/**
 * The committed v0.0.40–v0.0.45 fixtures are what scripts/slurm-fixtures.ts renders with the fake
 * slurmrestd's renderer today: a change to the renderer that alters them fails here until
 * `npm run fixtures` rewrites them (and fixtures-schema.test.ts checks them against the specs).
 */
import { describe, expect, it } from 'vitest';
import { builtFixtures, patch } from '../../scripts/slurm-fixtures.js';
import { BUILT_VERSIONS, listFiles, readText } from './fixtures.js';

describe('built fixtures', () => {
  const rendered = builtFixtures();

  it('are the files the generator writes, no more, no fewer', () => {
    const committed = BUILT_VERSIONS.flatMap((v) => listFiles('built', v).map((f) => `${v}/${f}`));
    expect([...rendered.keys()].sort()).toEqual(committed.sort());
  });

  for (const [file, text] of rendered) {
    it(`${file} is up to date (npm run fixtures)`, () => {
      expect(readText('built', file)).toBe(text);
    });
  }
});

describe('a patch of a rendered object', () => {
  it('replaces members, nested ones too', () => {
    const o = { state: ['IDLE'], required: { memory_per_cpu: 0 } };
    patch(o, { state: ['IDLE', 'CLOUD'], 'required.memory_per_cpu': 4096 }, 'node');
    expect(o).toEqual({ state: ['IDLE', 'CLOUD'], required: { memory_per_cpu: 4096 } });
  });

  it('cannot add a member the version does not send', () => {
    expect(() => patch({ state: [] }, { suspend_time: 0 }, 'node x')).toThrow('node x: no member suspend_time');
    expect(() => patch({ state: [] }, { 'required.memory_per_cpu': 0 }, 'job')).toThrow(/required\.memory_per_cpu/);
  });
});
