import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_HOSTS, expandHostlist, HostlistError, isEmptyHostlist } from '../../src/cluster/hostlist.js';

describe('expandHostlist', () => {
  it('expands the forms Slurm prints', () => {
    expect(expandHostlist('worker-[1,0]')).toEqual(['worker-1', 'worker-0']);
    expect(expandHostlist('a[01-03],b5')).toEqual(['a01', 'a02', 'a03', 'b5']);
    expect(expandHostlist('n[1-2]-ib[3-4]')).toEqual(['n1-ib3', 'n1-ib4', 'n2-ib3', 'n2-ib4']);
    expect(expandHostlist('gpu-[001-002,010],cpu-[7,9-10]')).toEqual([
      'gpu-001',
      'gpu-002',
      'gpu-010',
      'cpu-7',
      'cpu-9',
      'cpu-10',
    ]);
    expect(expandHostlist('node1')).toEqual(['node1']);
    expect(expandHostlist(' a1 , b2 ,')).toEqual(['a1', 'b2']);
    expect(expandHostlist('[1-3]')).toEqual(['1', '2', '3']);
  });

  it('keeps zero padding from the lower bound', () => {
    expect(expandHostlist('n[08-11]')).toEqual(['n08', 'n09', 'n10', 'n11']);
    expect(expandHostlist('n[8-11]')).toEqual(['n8', 'n9', 'n10', 'n11']);
    expect(expandHostlist('n[0098-0100]')).toEqual(['n0098', 'n0099', 'n0100']);
  });

  it('gives no hosts for Slurm’s words for none', () => {
    for (const none of ['', '   ', 'None assigned', '(null)', null, undefined]) {
      expect(expandHostlist(none)).toEqual([]);
      expect(isEmptyHostlist(none)).toBe(true);
    }
    expect(isEmptyHostlist('node1')).toBe(false);
  });

  it('rejects malformed lists with HostlistError', () => {
    for (const bad of ['a[1-', 'a]1', 'a[x]', 'a[3-1]', 'a[[1]]', 'a[]', 'a[1-2-3]', 'a[1,]', 'a[-1]']) {
      expect(() => expandHostlist(bad), bad).toThrow(HostlistError);
    }
  });

  it('refuses absurd expansions before generating them', () => {
    expect(() => expandHostlist('n[0-99999999]')).toThrow(/more than 100000 hosts/);
    expect(() => expandHostlist('a[0-999]b[0-999]')).toThrow(HostlistError);
    expect(() => expandHostlist('n[0-999999999999999999999999]')).toThrow(HostlistError);
    expect(() => expandHostlist('a[1-6],b[1-5]', 10)).toThrow(/more than 10 hosts/);
    expect(expandHostlist('a[1-5],b[1-5]', 10)).toHaveLength(10);
    expect(expandHostlist(`n[1-${DEFAULT_MAX_HOSTS}]`)).toHaveLength(DEFAULT_MAX_HOSTS);
  });
});

describe('expandHostlist properties', () => {
  const prefix = fc.stringMatching(/^[a-z][a-z0-9-]{0,6}$/);
  const range = fc
    .tuple(fc.nat({ max: 120 }), fc.nat({ max: 6 }), fc.nat({ max: 3 }))
    .map(([lo, span, pad]) => ({ lo, hi: lo + span, width: String(lo).length + pad }));
  const group = fc.array(range, { minLength: 1, maxLength: 3 });
  const item = fc.tuple(prefix, fc.array(fc.tuple(group, fc.stringMatching(/^[a-z-]{0,3}$/)), { maxLength: 2 }));

  const render = (r: { lo: number; hi: number; width: number }) =>
    r.lo === r.hi ? String(r.lo).padStart(r.width, '0') : `${String(r.lo).padStart(r.width, '0')}-${r.hi}`;

  it('expands to the product of the group sizes, each name matching its pattern', () => {
    fc.assert(
      fc.property(fc.array(item, { minLength: 1, maxLength: 3 }), (items) => {
        const text = items
          .map(([p, groups]) => p + groups.map(([g, suffix]) => `[${g.map(render).join(',')}]${suffix}`).join(''))
          .join(',');
        const hosts = expandHostlist(text);
        const expectedCount = items.reduce(
          (sum, [, groups]) => sum + groups.reduce((prod, [g]) => prod * g.reduce((n, r) => n + r.hi - r.lo + 1, 0), 1),
          0,
        );
        expect(hosts).toHaveLength(expectedCount);
        for (const h of hosts) expect(h).toMatch(/^[a-z][a-z0-9-]*$/);
        // Plain names are a hostlist too: expanding them again changes nothing.
        expect(expandHostlist(hosts.join(','))).toEqual(hosts);
      }),
    );
  });

  it('a single range yields lo..hi in order, padded to the lower bound’s width', () => {
    fc.assert(
      fc.property(prefix, range, (p, r) => {
        const hosts = expandHostlist(`${p}[${render(r)}]`);
        const numbers = hosts.map((h) => h.slice(p.length));
        expect(numbers.map(Number)).toEqual(Array.from({ length: r.hi - r.lo + 1 }, (_, i) => r.lo + i));
        for (const n of numbers) expect(n.length).toBe(Math.max(r.width, String(Number(n)).length));
      }),
    );
  });

  it('only ever throws HostlistError, whatever the input', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', '1', '9', '-', ',', '[', ']', ' ', '0'), maxLength: 30 }),
        (text) => {
          try {
            expect(expandHostlist(text).length).toBeLessThanOrEqual(DEFAULT_MAX_HOSTS);
          } catch (err) {
            expect(err).toBeInstanceOf(HostlistError);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });
});
