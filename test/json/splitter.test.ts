import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonArraySplitter, JsonStreamError } from '../../src/json/splitter.js';
import type { SplitResult } from '../../src/json/splitter.js';

/** Runs the splitter over `body` cut at the given offsets; returns the parsed elements and members. */
function split(body: Buffer, cuts: readonly number[], arrayKey = 'jobs'): { elements: unknown[]; result: SplitResult } {
  const elements: unknown[] = [];
  const splitter = new JsonArraySplitter({ arrayKey, onElement: (b) => elements.push(JSON.parse(b.toString('utf8'))) });
  let prev = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    splitter.write(body.subarray(prev, cut));
    prev = cut;
  }
  splitter.write(body.subarray(prev));
  return { elements, result: splitter.end() };
}

/** Chunks of one byte each: every boundary at once. */
function byteByByte(body: Buffer, arrayKey = 'jobs'): unknown[] {
  const elements: unknown[] = [];
  const splitter = new JsonArraySplitter({ arrayKey, onElement: (b) => elements.push(JSON.parse(b.toString('utf8'))) });
  for (let i = 0; i < body.length; i++) splitter.write(body.subarray(i, i + 1));
  splitter.end();
  return elements;
}

const canonical = (v: unknown): string => JSON.stringify(v);

const TRICKY_ELEMENTS: unknown[] = [
  { job_id: 1, name: 'quote " inside', path: 'C:\\dir\\', brackets: '}]{[', nested: { a: [1, [2, { b: '"]' }]] } },
  { name: 'unicode é ü 日本 😀 and escaped \u0022 quote', empty: {}, list: [] },
  'a bare string with \\" and \\\\',
  42.5e-3,
  -0.5,
  true,
  null,
  [],
  [[[]]],
  { '': '', 'key with "quotes"': '\\' },
];

function trickyDoc(indent?: number): Buffer {
  const doc = {
    meta: { plugin: { data_parser: 'data_parser/v0.0.44' }, jobs: ['not', 'the', 'array'] },
    jobs: TRICKY_ELEMENTS,
    last_update: { set: true, infinite: false, number: 1764000000 },
    errors: [],
    warnings: [{ description: 'w "1"', source: '[x]' }],
  };
  return Buffer.from(JSON.stringify(doc, null, indent), 'utf8');
}

describe('JsonArraySplitter', () => {
  it('returns the elements of the named array and parses the other members', () => {
    const { elements, result } = split(trickyDoc(), []);
    expect(elements.map(canonical)).toEqual(TRICKY_ELEMENTS.map((e) => canonical(JSON.parse(JSON.stringify(e)))));
    expect(result.arrayFound).toBe(true);
    expect(result.elements).toBe(TRICKY_ELEMENTS.length);
    expect(Object.keys(result.members).sort()).toEqual(['errors', 'last_update', 'meta', 'warnings']);
    expect(result.members['warnings']).toEqual([{ description: 'w "1"', source: '[x]' }]);
    // A member called "jobs" nested inside another member is not the streamed array.
    expect((result.members['meta'] as { jobs: string[] }).jobs).toEqual(['not', 'the', 'array']);
  });

  it('gives the same result for a cut at every byte position, compact and indented', () => {
    for (const indent of [undefined, 2]) {
      const body = trickyDoc(indent);
      const whole = split(body, []);
      for (let cut = 0; cut <= body.length; cut++) {
        const { elements, result } = split(body, [cut]);
        expect(elements.map(canonical), `cut at ${cut}`).toEqual(whole.elements.map(canonical));
        expect(canonical(result.members), `cut at ${cut}`).toBe(canonical(whole.result.members));
      }
    }
  });

  it('handles one-byte chunks (splits inside multi-byte characters and escapes)', () => {
    const body = trickyDoc();
    expect(byteByByte(body).map(canonical)).toEqual(split(body, []).elements.map(canonical));
  });

  it('streams nothing and keeps the member when the named member is not an array', () => {
    const { elements, result } = split(Buffer.from('{"jobs": null, "errors": [{"error": "x"}]}'), [5]);
    expect(elements).toEqual([]);
    expect(result.arrayFound).toBe(false);
    expect(result.members['jobs']).toBeNull();
  });

  it('reports a missing array', () => {
    const { result } = split(Buffer.from('{"meta": {}, "errors": []}'), []);
    expect(result.arrayFound).toBe(false);
    expect(result.elements).toBe(0);
  });

  it('accepts an empty array, an empty object and a byte order mark', () => {
    expect(split(Buffer.from('{"jobs":[]}'), []).result.arrayFound).toBe(true);
    expect(split(Buffer.from('{}'), []).result.arrayFound).toBe(false);
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"jobs":[1]}')]);
    expect(split(bom, [1, 2]).elements).toEqual([1]);
  });

  it('accepts plain Uint8Array chunks', () => {
    const elements: unknown[] = [];
    const s = new JsonArraySplitter({ arrayKey: 'nodes', onElement: (b) => elements.push(JSON.parse(b.toString())) });
    s.write(new TextEncoder().encode('{"nodes":[{"name":"n1"},'));
    s.write(new TextEncoder().encode('{"name":"n2"}]}'));
    s.end();
    expect(elements).toEqual([{ name: 'n1' }, { name: 'n2' }]);
  });

  it('rejects an HTML error page at the first byte', () => {
    const s = new JsonArraySplitter({ arrayKey: 'jobs', onElement: () => undefined });
    expect(() => s.write(Buffer.from('<html><body>502 Bad Gateway</body></html>'))).toThrow(/expected a JSON object/);
  });

  it('rejects a truncated body at end()', () => {
    const body = trickyDoc();
    for (const cut of [0, 1, 20, Math.floor(body.length / 2), body.length - 1]) {
      const s = new JsonArraySplitter({ arrayKey: 'jobs', onElement: () => undefined });
      s.write(body.subarray(0, cut));
      expect(() => s.end(), `cut at ${cut}`).toThrow(JsonStreamError);
    }
  });

  it('rejects top-level syntax errors and trailing data', () => {
    const bad = [
      '{"a" 1}',
      '{"a":1 "b":2}',
      '{a:1}',
      '{"jobs":[1,,2]}',
      '{"jobs":[1 2]}',
      '{"jobs":[1]} x',
      '{"a":1}{',
    ];
    for (const text of bad) {
      const s = new JsonArraySplitter({ arrayKey: 'jobs', onElement: () => undefined });
      expect(() => {
        s.write(Buffer.from(text));
        s.end();
      }, text).toThrow(JsonStreamError);
    }
  });

  it('rejects a member that is not valid JSON', () => {
    const s = new JsonArraySplitter({ arrayKey: 'jobs', onElement: () => undefined });
    expect(() => s.write(Buffer.from('{"meta": {"a": tru}, "jobs": []}'))).toThrow(
      /bad JSON in top-level member "meta"/,
    );
  });

  it('hands a malformed element to the caller instead of failing the stream', () => {
    const got: string[] = [];
    const s = new JsonArraySplitter({ arrayKey: 'jobs', onElement: (b) => got.push(b.toString()) });
    s.write(Buffer.from('{"jobs":[{"a":tru},{"b":1}],"errors":[]}'));
    s.end();
    expect(got).toEqual(['{"a":tru}', '{"b":1}']);
  });

  it('refuses an element above the size limit and members above theirs', () => {
    const big = `{"jobs":[{"x":"${'a'.repeat(200)}"}]}`;
    const s = new JsonArraySplitter({ arrayKey: 'jobs', onElement: () => undefined, maxElementBytes: 100 });
    expect(() => s.write(Buffer.from(big))).toThrow(/exceeds 100 bytes/);
    const s2 = new JsonArraySplitter({ arrayKey: 'jobs', onElement: () => undefined, maxElementBytes: 100 });
    expect(() => {
      s2.write(Buffer.from(big.slice(0, 60)));
      s2.write(Buffer.from(big.slice(60)));
    }).toThrow(/exceeds 100 bytes/);
    const s3 = new JsonArraySplitter({ arrayKey: 'jobs', onElement: () => undefined, maxMemberBytes: 50 });
    expect(() => s3.write(Buffer.from(`{"meta":"${'m'.repeat(100)}"}`))).toThrow(/exceed 50 bytes/);
  });
});

describe('JsonArraySplitter properties', () => {
  // Strings made mostly of the characters a scanner can trip on: quotes, backslashes (escapes),
  // brackets and multi-byte characters. Random code points alone almost never produce them.
  const trickyString = fc.string({
    unit: fc.constantFrom('"', '\\', '[', ']', '{', '}', ',', ':', 'a', 'é', '😀', ' ', '\n'),
    maxLength: 12,
  });
  const { tricky } = fc.letrec((tie) => ({
    tricky: fc.oneof(
      { maxDepth: 4, depthSize: 'small' },
      trickyString,
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
      fc.constant(null),
      fc.array(tie('tricky'), { maxLength: 4 }),
      fc.dictionary(trickyString, tie('tricky'), { maxKeys: 4 }),
    ),
  }));
  const json = fc.oneof(fc.jsonValue({ maxDepth: 4, stringUnit: 'binary' }), tricky);
  const members = fc.dictionary(
    fc.oneof(trickyString, fc.string({ unit: 'binary', maxLength: 8 })).filter((k) => k !== 'jobs'),
    json,
    { maxKeys: 4 },
  );

  it('yields exactly JSON.parse’s elements and members under any chunking and formatting', () => {
    fc.assert(
      fc.property(
        fc.array(json, { maxLength: 12 }),
        members,
        fc.integer({ min: 0, max: 4 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (elements, others, indent, rawCuts) => {
          const doc = { ...others, jobs: elements };
          const text = JSON.stringify(doc, null, indent === 0 ? undefined : indent);
          const body = Buffer.from(text, 'utf8');
          const cuts = rawCuts.map((c) => c % (body.length + 1));
          const { elements: got, result } = split(body, cuts);
          const expected = JSON.parse(text) as { jobs: unknown[] } & Record<string, unknown>;
          expect(got.map(canonical)).toEqual(expected.jobs.map(canonical));
          const expectedMembers = Object.entries(expected).filter(([k]) => k !== 'jobs');
          expect(Object.entries(result.members).map(canonical)).toEqual(expectedMembers.map(canonical));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never throws anything but JsonStreamError on arbitrary bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const s = new JsonArraySplitter({ arrayKey: 'jobs', onElement: () => undefined });
        try {
          s.write(bytes);
          s.end();
        } catch (err) {
          expect(err).toBeInstanceOf(JsonStreamError);
        }
      }),
      { numRuns: 500 },
    );
  });
});
