import { describe, expect, it } from 'vitest';
import { parseSlurmJson } from '../../../src/cluster/api/slurm-json.js';

describe('parseSlurmJson', () => {
  it('reads the bare Infinity of slurmrestd 24.11 (/shares "level") as null, keeping strings as they are', () => {
    const text =
      '{"shares": [{"name": "Infinity", "level": Infinity, "u": -Infinity, "x": NaN, "s": "a \\"NaN\\" b"}]}';
    expect(() => JSON.parse(text)).toThrow();
    expect(parseSlurmJson(text)).toEqual({
      shares: [{ name: 'Infinity', level: null, u: null, x: null, s: 'a "NaN" b' }],
    });
  });

  it('is JSON.parse for well-formed text, and still refuses text broken otherwise', () => {
    expect(parseSlurmJson('{"a": [1, 2.5e3, "Infinity"]}')).toEqual({ a: [1, 2500, 'Infinity'] });
    expect(() => parseSlurmJson('{"a": Infinity,}')).toThrow(SyntaxError);
    expect(() => parseSlurmJson('{"a": tru}')).toThrow(SyntaxError);
  });
});
