/**
 * Readings fed in chunks as the runner hands them over: any split (inside strings, escapes,
 * numbers, multi-byte UTF-8 sequences) gives exactly the parse of the whole text, and what the
 * scanner holds between chunks does not grow with the output.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { entryStream, MAX_TEXT, type JsonEntry } from '../../../src/json/entries.js';
import { JsonStreamError as JsonSyntaxError } from '../../../src/json/stream.js';
import {
  counterReader,
  CounterNames,
  MAX_COUNTERS,
  resourceReader,
  type QpStreamReader,
} from '../../../src/node/qp/qp-parse.js';

/** `bytes` cut at the given points (any byte, inside a UTF-8 sequence too). */
function split(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const to of [...at, bytes.length]) {
    out.push(bytes.subarray(from, to));
    from = to;
  }
  return out;
}

/** Every entry of a text fed in `chunks` (strings), or the syntax error's message. */
function entries(chunks: readonly string[]): JsonEntry[] | string {
  const out: JsonEntry[] = [];
  let n = 0;
  const s = entryStream({
    shape: { maxFields: 3, maxArrayItems: 2 },
    keep: () => n++ % 3 !== 1,
    onEntry: (e) => out.push(e),
  });
  try {
    for (const c of chunks) s.push(c);
    s.end();
  } catch (err) {
    if (err instanceof JsonSyntaxError) return err.message;
    throw err;
  }
  return out;
}

function read<T>(reader: QpStreamReader<T>, chunks: readonly Buffer[]): unknown {
  for (const c of chunks) reader.push(c);
  return reader.end();
}

const text = fc.string({ unit: 'binary', maxLength: 12 });
// rdma-like entries, with texts full of escapes and characters outside ASCII (and the BMP).
const rdmaEntry = fc.record({
  ifname: fc.oneof(fc.constant('mlx5_1'), text),
  port: fc.oneof(fc.constant(1), fc.nat(3), fc.constant('1')),
  cntn: fc.oneof(fc.nat(), fc.double()),
  pid: fc.oneof(fc.nat(), fc.constant(-1)),
  comm: text,
  rx_write_requests: fc.oneof(fc.bigInt({ min: 0n, max: 2n ** 64n }).map(String), fc.double(), fc.nat()),
  [`odd_${'\u00e9'}`]: fc.nat(),
  lqpn: fc.array(fc.oneof(fc.nat(), fc.double(), text), { maxLength: 5 }),
  nested: fc.jsonValue({ maxDepth: 3, stringUnit: 'binary' }),
});

describe('a reading split into chunks', () => {
  it('scans exactly as the whole text, valid or not, whatever the splits (property)', () => {
    const arrays = fc.array(fc.jsonValue({ maxDepth: 5, stringUnit: 'binary' }), { maxLength: 6 });
    const edit = fc.option(fc.record({ at: fc.nat(), ch: fc.constantFrom('"', ',', '\\', 'u', '1', '-', 'e') }));
    fc.assert(
      fc.property(arrays, edit, fc.boolean(), fc.array(fc.nat(), { maxLength: 12 }), (a, e, pretty, cuts) => {
        let whole = pretty ? JSON.stringify(a, null, 1) : JSON.stringify(a);
        if (e) whole = whole.slice(0, e.at % (whole.length + 1)) + e.ch + whole.slice(e.at % (whole.length + 1));
        const at = [...new Set(cuts.map((c) => c % (whole.length + 1)))].sort((x, y) => x - y);
        const pieces = [0, ...at].map((from, i) => whole.slice(from, at[i] ?? whole.length));
        expect(entries(pieces)).toEqual(entries([whole]));
      }),
      { numRuns: 400 },
    );
  });

  it('reads counters and QPs exactly as the whole text, split inside UTF-8 sequences (property)', () => {
    fc.assert(
      fc.property(fc.array(rdmaEntry, { maxLength: 5 }), fc.array(fc.nat(), { maxLength: 16 }), (list, cuts) => {
        const bytes = Buffer.from(JSON.stringify(list), 'utf8');
        const chunks = split(bytes, cuts);
        const whole = read(counterReader({ names: new CounterNames() }), [bytes]);
        expect(read(counterReader({ names: new CounterNames() }), chunks)).toEqual(whole);
        expect(read(resourceReader({ names: new CounterNames() }), chunks)).toEqual(
          read(resourceReader({ names: new CounterNames() }), [bytes]),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('splits a multi-byte character between chunks without losing or mangling it', () => {
    const bytes = Buffer.from('[{"ifname":"m\u00e9x\u{1F600}","port":1,"cntn":7,"rx_write_requests":1}]', 'utf8');
    const one = (chunks: Buffer[]): unknown => {
      const r = counterReader({ names: new CounterNames() });
      for (const c of chunks) r.push(c);
      const out = r.end();
      return out.ok && out.value.items[0]?.device;
    };
    for (let i = 0; i < bytes.length; i++)
      expect(one([bytes.subarray(0, i), bytes.subarray(i)])).toBe('m\u00e9x\u{1F600}');
  });
});

describe('memory of a streamed reading', () => {
  const CHUNK = 1 << 16;
  /** A reading of `n` entries, each with a `len`-character string, fed in CHUNK-byte pieces. */
  function feed(n: number, len: number): { held: QpStreamReader<unknown>['held']; bytes: number; kept: number } {
    const reader = counterReader({ names: new CounterNames() });
    const long = 'x\\"\u00e9'.repeat(Math.ceil(len / 4)).slice(0, len);
    let pending = '[';
    let bytes = 0;
    const flush = (all: boolean): void => {
      while (pending.length >= CHUNK || (all && pending.length > 0)) {
        const piece = Buffer.from(pending.slice(0, CHUNK), 'utf8');
        pending = pending.slice(CHUNK);
        bytes += piece.length;
        reader.push(piece);
      }
    };
    for (let i = 0; i < n; i++) {
      pending += `${i ? ',' : ''}{"ifname":"mlx5_1","port":1,"cntn":${i},"comm":"${long}","lqpn":[${i},${i + 1}]}`;
      flush(false);
    }
    pending += ']';
    flush(true);
    const r = reader.end();
    return { held: reader.held, bytes, kept: r.ok ? r.value.items.length : -1 };
  }

  it('holds at most MAX_TEXT characters of a token between chunks, however long the output', () => {
    const small = feed(2_000, 100);
    const large = feed(40_000, 100);
    const longStrings = feed(48, 1 << 18);
    expect(large.bytes).toBeGreaterThan(10 * small.bytes);
    expect(longStrings.bytes).toBeGreaterThan(12 << 20);
    for (const run of [small, large, longStrings]) {
      expect(run.held.maxChars).toBeLessThanOrEqual(MAX_TEXT);
      // Nesting: the array, an entry, its lqpn list.
      expect(run.held.maxDepth).toBeLessThanOrEqual(3);
      expect(run.held.chars).toBe(0);
    }
    expect(small.kept).toBe(2_000);
    expect(large.kept).toBe(MAX_COUNTERS);
    expect(longStrings.kept).toBe(48);
  });

  it('keeps a kept string over MAX_TEXT as no text (the entry still read)', () => {
    const r = counterReader({ names: new CounterNames() });
    r.push(`[{"ifname":"${'a'.repeat(MAX_TEXT + 1)}","port":1,"cntn":1},{"ifname":"b","port":1,"cntn":2}]`);
    const out = r.end();
    expect(out.ok && out.value.items.map((c) => c.device)).toEqual(['b']);
  });
});
