/**
 * The committed v0.0.40–v0.0.45 fixtures are what scripts/slurm-fixtures.ts renders with the fake
 * slurmrestd's renderer today: a change to the renderer that alters them fails here until
 * `npm run fixtures` rewrites them (and fixtures-schema.test.ts checks them against the specs).
 */
import { describe, expect, it } from 'vitest';
import { builtFixtures } from '../../scripts/slurm-fixtures.js';
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
