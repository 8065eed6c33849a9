/**
 * The stream on its own, with a reader that follows every value and rebuilds it: it agrees with
 * JSON.parse on any JSON text however it is chunked, refuses what JSON.parse refuses, takes raw
 * values by their extent, and keeps its nesting bound.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonStream, JsonStreamError, Read, Scalar, type JsonReader } from '../../src/json/stream.js';

/** Rebuilds every value; values at depth `rawAt` are taken raw (and parsed with JSON.parse). */
class Rebuild implements JsonReader {
  result: unknown;
  private readonly stack: { value: unknown[] | Record<string, unknown>; key?: string }[] = [];
  /** A literal's text is not built: it is told by its first byte. */
  private literal: unknown;
  constructor(private readonly rawAt = -1) {}
  value(c: number, depth: number): Read {
    if (depth === this.rawAt) return Read.Raw;
    this.literal = c === 0x74 ? true : c === 0x66 ? false : null;
    if (c === 0x5b || c === 0x7b) this.stack.push({ value: c === 0x5b ? [] : {} });
    return Read.Follow;
  }
  key(text: string | undefined): void {
    (this.stack[this.stack.length - 1] as { key?: string }).key = text;
  }
  scalar(kind: Scalar, text: string | undefined): void {
    this.put(kind === Scalar.Literal ? this.literal : kind === Scalar.Number ? Number(text) : text);
  }
  close(): void {
    this.put((this.stack.pop() as { value: unknown }).value);
  }
  skipped(): void {}
  raw(bytes: Buffer): void {
    this.put(JSON.parse(bytes.toString('utf8')));
  }
  expects(): string {
    return 'a value';
  }
  private put(v: unknown): void {
    const top = this.stack[this.stack.length - 1];
    if (top === undefined) this.result = v;
    else if (Array.isArray(top.value)) top.value.push(v);
    // defineProperty: a "__proto__" key is an own member, as JSON.parse makes it.
    else Object.defineProperty(top.value, top.key as string, { value: v, enumerable: true, writable: true });
  }
}

function run(chunks: readonly (Buffer | string)[], rawAt = -1): unknown {
  const r = new Rebuild(rawAt);
  const s = new JsonStream(r, { maxText: 1 << 20 });
  for (const c of chunks) s.push(c);
  s.end();
  return r.result;
}

function cut(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  return [0, ...at].map((from, i) => bytes.subarray(from, at[i] ?? bytes.length));
}

describe('JsonStream', () => {
  const value = fc.jsonValue({ maxDepth: 5, stringUnit: 'binary' });

  it('rebuilds exactly what JSON.parse reads, whatever the chunks (property)', () => {
    fc.assert(
      fc.property(value, fc.array(fc.nat(), { maxLength: 10 }), fc.boolean(), (v, cuts, pretty) => {
        const text = pretty ? JSON.stringify(v, null, 2) : JSON.stringify(v);
        expect(run(cut(Buffer.from(text, 'utf8'), cuts))).toEqual(JSON.parse(text));
      }),
      { numRuns: 300 },
    );
  });

  it('takes values raw at a depth, by their extent, whatever the chunks (property)', () => {
    fc.assert(
      fc.property(fc.array(value, { maxLength: 6 }), fc.array(fc.nat(), { maxLength: 10 }), (v, cuts) => {
        const text = JSON.stringify(v);
        expect(run(cut(Buffer.from(text, 'utf8'), cuts), 1)).toEqual(JSON.parse(text));
      }),
      { numRuns: 300 },
    );
  });

  it('refuses exactly what JSON.parse refuses, among cut and altered texts (property)', () => {
    const edit = fc.record({
      cut: fc.nat(),
      at: fc.nat(),
      ch: fc.constantFrom('"', ',', ']', '}', '\\', '\u0001', 'x', '-', '.', 'e', ':'),
    });
    fc.assert(
      fc.property(value, edit, (v, e) => {
        const full = JSON.stringify(v);
        const kept = full.slice(0, e.cut % (full.length + 1));
        const at = e.at % (kept.length + 1);
        const text = kept.slice(0, at) + e.ch + kept.slice(at);
        let parses = true;
        try {
          JSON.parse(text);
        } catch {
          parses = false;
        }
        let streams = true;
        try {
          run([text]);
        } catch (err) {
          if (!(err instanceof JsonStreamError)) throw err;
          streams = false;
        }
        expect(streams, text).toBe(parses);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses the usual near-misses and takes the edge cases JSON allows', () => {
    const refused = ['[1,]', '{"a":1,}', '[,1]', '{,}', '01', '1.', '.5', '-', '1e', '+1', '"\\x"', '"\\u12"'];
    refused.push('tru', 'nul', '[1 2]', '{"a" 1}', '{1:2}', '"a', '["\u0001"]', '[1]]', '{"a":1}}', '1 2', '[}', '{]');
    for (const text of refused) {
      expect(() => JSON.parse(text), text).toThrow();
      expect(() => run([text]), text).toThrow(JsonStreamError);
    }
    for (const text of [' [1] ', '-0.5e+3', '0', '"\\u00e9"', '{}', '[[],{}]', '{"":""}', '1E-2', 'null'])
      expect(run([text]), text).toEqual(JSON.parse(text));
  });

  it('decodes escapes and characters split between string chunks', () => {
    const text = '["\\u00e9\\ud83d\\ude00\\n\\"\\\\\\/", "\u{1F600}x"]';
    for (let i = 0; i <= text.length; i++) expect(run([text.slice(0, i), text.slice(i)])).toEqual(JSON.parse(text));
  });

  it('accepts containers nested 33 deep (32 around the innermost) and refuses 34', () => {
    expect(() => run(['['.repeat(33) + ']'.repeat(33)])).not.toThrow();
    expect(() => run(['['.repeat(34) + ']'.repeat(34)])).toThrow(/nested too deep/);
  });

  it('says where a truncated text ended', () => {
    expect(() => run(['{"a":"xy'])).toThrow(/truncated JSON: the text ended \(unterminated string\) after 8 bytes/);
    expect(() => run(['[1,'])).toThrow(/unclosed container/);
    expect(() => run(['  '])).toThrow(/no value/);
  });
});
