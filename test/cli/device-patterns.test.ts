import { describe, expect, it } from 'vitest';
import { compilePattern, deviceFilter, devicePatternErrors } from '../../src/cli/device-patterns.js';
import { ConfigError } from '../../src/cli/common.js';

const GPU = ['nvidia3', 'GPU-8a1f5c2e-0d4b-4c1a-9e3f-1b2c3d4e5f60'];

describe('device patterns (--devices-include, --devices-exclude)', () => {
  it('match whole names, shell-style', () => {
    const re = (p: string): RegExp => compilePattern(p) as RegExp;
    expect(re('mlx5_*').test('mlx5_12')).toBe(true);
    expect(re('mlx5_*').test('xmlx5_1')).toBe(false);
    expect(re('mlx5_?').test('mlx5_1')).toBe(true);
    expect(re('mlx5_?').test('mlx5_10')).toBe(false);
    expect(re('mlx5_[0-3]').test('mlx5_3')).toBe(true);
    expect(re('mlx5_[0-3]').test('mlx5_4')).toBe(false);
    expect(re('mlx5_[!0]').test('mlx5_0')).toBe(false);
    expect(re('mlx5_[!0]').test('mlx5_1')).toBe(true);
    // A dot is a dot, not any character.
    expect(re('mlx5.0').test('mlx5_0')).toBe(false);
  });

  it('no pattern: no filter', () => {
    expect(deviceFilter({})).toBeUndefined();
  });

  it('exclude wins over include, and says which pattern left a device out', () => {
    const f = deviceFilter({ devicesInclude: 'mlx5_*, nvidia*', devicesExclude: 'mlx5_1,nvidia3' });
    expect(f?.(['mlx5_0'])).toBeUndefined();
    expect(f?.(['mlx5_1'])).toBe('excluded by --devices-exclude mlx5_1');
    expect(f?.(GPU)).toBe('excluded by --devices-exclude nvidia3');
    expect(f?.(['irdma0'])).toBe('excluded by --devices-include mlx5_*,nvidia* (matches none of its patterns)');
  });

  it('matches a GPU by its UUID as well as by nvidia<minor>', () => {
    const f = deviceFilter({ devicesExclude: 'GPU-8a1f5c2e-*' });
    expect(f?.(GPU)).toBe('excluded by --devices-exclude GPU-8a1f5c2e-*');
    expect(f?.(['nvidia0', 'GPU-00000000-0000-0000-0000-000000000000'])).toBeUndefined();
  });

  it('names every bad pattern of both options at once', () => {
    const bad = { devicesInclude: 'mlx5_[0-3,,/dev/infiniband/uverbs0', devicesExclude: 'mlx5_.*,mlx5 1,[]' };
    const errors = devicePatternErrors(bad);
    expect(errors).toEqual([
      '--devices-include "mlx5_[0-3": has a [ with no ] after it',
      '--devices-include "": an empty pattern (two commas, or one at an end)',
      '--devices-include "/dev/infiniband/uverbs0": patterns name devices (mlx5_0, nvidia0), not paths',
      '--devices-exclude "mlx5_.*": looks like a regular expression: patterns are shell-style (mlx5_*, mlx5_[0-3])',
      '--devices-exclude "mlx5 1": has a character no device name has (names: letters, digits, _ . : -)',
      '--devices-exclude "[]": has an empty [] set',
    ]);
    expect(() => deviceFilter(bad)).toThrow(ConfigError);
    expect(() => deviceFilter(bad)).toThrow(errors.join('\n'));
    expect(devicePatternErrors({ devicesExclude: 'mlx5_[3-0]' })).toEqual([
      '--devices-exclude "mlx5_[3-0]": has a range that runs backwards (e.g. [3-0])',
    ]);
  });
});
