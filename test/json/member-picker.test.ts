import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonArraySplitter } from '../../src/json/splitter.js';
import { MemberPicker } from '../../src/json/member-picker.js';

/** The picker's output for one whole object text, parsed; undefined when it hands the text on. */
function pick(names: readonly string[], text: string): unknown {
  const out = new MemberPicker(names).pick(Buffer.from(text, 'utf8'));
  return out === undefined ? undefined : JSON.parse(out.toString('utf8'));
}

/**
 * What keeping `names` means for an element written by JSON.stringify: its own members filtered,
 * where a key JSON.stringify writes with escapes is always kept.
 */
function expected(names: readonly string[], element: unknown): unknown {
  if (typeof element !== 'object' || element === null || Array.isArray(element)) return element;
  const kept = (k: string): boolean => names.includes(k) || JSON.stringify(k) !== `"${k}"`;
  return Object.fromEntries(Object.entries(element).filter(([k]) => kept(k)));
}

/** Runs the splitter with keepMembers over `body` cut into the given chunks; returns the elements' texts. */
function splitKeeping(names: readonly string[], chunks: readonly Buffer[]): string[] {
  const texts: string[] = [];
  const splitter = new JsonArraySplitter({
    arrayKey: 'jobs',
    keepMembers: names,
    onElement: (b) => texts.push(b.toString('utf8')),
  });
  for (const chunk of chunks) splitter.write(chunk);
  splitter.end();
  return texts;
}

describe('MemberPicker', () => {
  it('keeps the named members in their original order and drops the others', () => {
    const out = new MemberPicker(['c', 'a']).pick(Buffer.from('{"a":1,"b":2,"c":3}'));
    expect(out?.toString('utf8')).toBe('{"a":1,"c":3}');
  });

  it('keeps an escaped key whatever it spells, and matches unescaped keys by their bytes', () => {
    const text = '{"a\\"b":1,"c":2,"\\u0063":3,"d":4,"c\\\\":5}';
    // Keys written with escapes are kept (they are compared raw, so cannot be ruled out).
    expect(pick(['c'], text)).toEqual({ 'a"b': 1, c: 3, 'c\\': 5 });
    expect(pick(['d'], text)).toEqual({ 'a"b': 1, c: 3, d: 4, 'c\\': 5 });
  });

  it('copies nested values byte for byte and reads names at the top level only', () => {
    const text =
      '{"x":{"keep":1,"y":[1,{"}":"]"}]},"keep":"v}\\"]","arr":[[{"keep":[]}],"{"],' +
      '"n":-1.5e3,"t":true,"z":null,"s":{"keep":{}}}';
    expect(pick(['keep', 'n', 't', 'z', 's'], text)).toEqual({
      keep: 'v}"]',
      n: -1500,
      t: true,
      z: null,
      s: { keep: {} },
    });
    expect(pick(['x', 'arr'], text)).toEqual({ x: { keep: 1, y: [1, { '}': ']' }] }, arr: [[{ keep: [] }], '{'] });
  });

  it('keeps non-ASCII names and values intact', () => {
    expect(pick(['日本', 'é'], '{"日本":"😀","x":"ü","é":["ñ"]}')).toEqual({ 日本: '😀', é: ['ñ'] });
  });

  it('answers an empty object, and an object with none of the names, with {}', () => {
    expect(pick(['a'], ' { } ')).toEqual({});
    expect(pick(['a'], '{"b":{"a":1}}')).toEqual({});
  });

  it('hands on whole what is not an object or does not scan cleanly', () => {
    for (const text of ['1', '"s"', 'null', '[{"a":1}]', '{"a":1', '{"a" 1}', '{"a":1}x', '{a:1}', '{"a":1,}'])
      expect(pick(['a'], text), text).toBeUndefined();
  });

  it('tells where an object ends inside a larger buffer, or -1 when it ends past the limit', () => {
    const src = Buffer.from('[{"a":"}","b":2},3]');
    const picker = new MemberPicker(['b']);
    expect(picker.scan(src, 1, src.length)).toBe(16);
    expect(picker.picked().toString('utf8')).toBe('{"b":2}');
    expect(picker.scan(src, 1, 15)).toBe(-1);
    expect(picker.scan(src, 0, src.length)).toBe(-1);
  });

  it('tells apart names of one length and the same first and last bytes, and keeps an empty name', () => {
    const text = '{"abxc":1,"abyc":2,"azzc":3,"":4,"a":5}';
    expect(pick(['abyc'], text)).toEqual({ abyc: 2 });
    expect(pick(['azzc', 'abxc'], text)).toEqual({ abxc: 1, azzc: 3 });
    expect(pick([''], text)).toEqual({ '': 4 });
    expect(pick(['a'], text)).toEqual({ a: 5 });
  });

  it('keeps exactly the named members of any object (property)', () => {
    const key = fc.oneof(fc.constantFrom('job_id', 'job_ie', 'jab_id', 'id', 'state', ''), fc.string({ maxLength: 6 }));
    fc.assert(
      fc.property(fc.dictionary(key, fc.jsonValue({ maxDepth: 3 })), fc.array(key, { maxLength: 4 }), (obj, names) => {
        const text = JSON.stringify(obj);
        expect(pick(names, text)).toEqual(expected(names, JSON.parse(text)));
      }),
      { numRuns: 500 },
    );
  });

  it('grows its output for a kept member larger than its buffer', () => {
    const big = 'x'.repeat(100_000);
    expect(pick(['a'], `{"a":"${big}","b":1}`)).toEqual({ a: big });
  });
});

describe('JsonArraySplitter with keepMembers', () => {
  const elements: unknown[] = [
    { job_id: 1, name: 'quote " and }]', nested: { job_id: 9, list: [{ name: '[' }] }, drop: 'x' },
    'a bare string',
    7,
    null,
    [{ job_id: 2 }],
    {},
    { 'job\\id': 3, job_id: 4, state: { current: ['RUNNING'] }, user: 'é日😀' },
    { drop: [1, 2, 3], job_id: 5 },
  ];
  const names = ['job_id', 'state', 'user', 'name'];
  const body = Buffer.from(`{"meta":{"v":1},"jobs":[ ${elements.map((e) => JSON.stringify(e)).join(' , ')} ]}`, 'utf8');
  const want = elements.map((e) => expected(names, e));

  it('hands on objects cut to the named members and other elements whole', () => {
    const got = splitKeeping(names, [body]).map((t) => JSON.parse(t) as unknown);
    expect(got).toEqual(want);
  });

  it('gives the same elements whatever offset the body is cut at', () => {
    for (let cut = 0; cut <= body.length; cut++) {
      const got = splitKeeping(names, [body.subarray(0, cut), body.subarray(cut)]).map((t) => JSON.parse(t) as unknown);
      expect(got, `cut at byte ${cut}`).toEqual(want);
    }
  });

  it('gives the same elements when every byte is its own chunk', () => {
    const chunks = [...body].map((_, i) => body.subarray(i, i + 1));
    expect(splitKeeping(names, chunks).map((t) => JSON.parse(t) as unknown)).toEqual(want);
  });
});

describe('MemberPicker memory', () => {
  it('scans a buffer the caller rewrote between chunks afresh', () => {
    const texts: string[] = [];
    const splitter = new JsonArraySplitter({
      arrayKey: 'jobs',
      keepMembers: ['a'],
      onElement: (b) => texts.push(b.toString('utf8')),
    });
    // Same shapes at the same offsets: bytes left from the chunk before would scan cleanly.
    const parts = ['{"jobs":[', '{"a":1,"b":2},', '{"a":3,"b":4},', '{"a":5,"b":6}]}'].map((p) => p.padEnd(16, ' '));
    const reused = Buffer.alloc(16);
    for (const p of parts) {
      reused.write(p);
      splitter.write(reused);
    }
    splitter.end();
    expect(texts).toEqual(['{"a":1}', '{"a":3}', '{"a":5}']);
  });

  it('picks among hundreds of names', () => {
    const names = Array.from({ length: 513 }, (_, i) => `m${i}`);
    expect(pick(names, '{"m511":1,"x":2,"m0":3,"m":4}')).toEqual({ m511: 1, m0: 3 });
  });

  it('grows its output for an element far larger than its first buffer', () => {
    const big = 'y'.repeat(3_000_000);
    expect(pick(['b'], `{"a":"${big}","b":[1,2]}`)).toEqual({ b: [1, 2] });
    expect(pick(['a'], `{"a":"${big}","b":[1,2]}`)).toEqual({ a: big });
  });
});
