/**
 * Prometheus text for the snapshot families, written exactly as the SDK's
 * PrometheusSerializer would write them but straight into a gzip stream: on a
 * 100k-job cluster (~700k series, 77 MB of text) the SDK path took 2-3 s per
 * collection and held the text; this takes ~0.5 s and holds 6 MB compressed.
 */
import { once } from 'node:events';
import { createGzip, gunzipSync } from 'node:zlib';
import { diag } from '@opentelemetry/api';
import type { Body } from './http.js';
import type { AnyFamily, Family, MetricSpec, Point } from './spec.js';

export const NO_REGISTERED_METRICS = '# no registered metrics';

/**
 * The text is written in pieces, the first FIRST_PIECE_BYTES long and each later one twice the one
 * before (or as long as the string to write, if longer), up to LARGEST_PIECE_BYTES: a node's
 * exposition (some 100 KB) takes a few small pieces, a cluster's (77 MB at 100k jobs, written in
 * strings of ~64 K characters) soon moves in 1 MB ones. A 1 MB piece and 256 KB output buffers for
 * every rendering sat outside V8's heap until a collection freed them (the node agent's peak RSS
 * moved within run-to-run noise, bench/daemon.ts: docs/benchmarks.md).
 */
const FIRST_PIECE_BYTES = 32 * 1024;
const LARGEST_PIECE_BYTES = 1024 * 1024;
const EMPTY = Buffer.alloc(0);
/** The compressor's output buffers: a node's whole exposition compresses into one (some 10 KB). */
const CHUNK_BYTES = 64 * 1024;
/** Text handed to the compressor but not yet compressed, beyond which the rendering waits. */
const BACKLOG_BYTES = 8 * 1024 * 1024;

/**
 * Writes UTF-8 text into a gzip stream in pieces of up to 1 MB. The stream compresses on the libuv thread
 * pool; breathe() lets it keep up (and lets scrapes of the previous exposition be answered)
 * between pieces of a long rendering, so neither the text nor its pieces pile up.
 */
export class GzipWriter {
  private readonly z = createGzip({ level: 1, chunkSize: CHUNK_BYTES });
  private readonly out: Buffer[] = [];
  private readonly ended: Promise<unknown>;
  /** Pieces the compressor is done with, for reuse: a rendering allocates a few, not one per MB. */
  private readonly spare: Buffer[] = [];
  /** The last piece's size (0 before the first). */
  private size = 0;
  /** The piece being filled; empty until the first write and after each hand-over. */
  private buf: Buffer = EMPTY;
  private pos = 0;
  private bytes = 0;
  private handedOver = false;

  constructor() {
    this.z.on('data', (b: Buffer) => this.out.push(b));
    this.ended = once(this.z, 'end');
    this.ended.catch(() => undefined);
  }

  write(s: string): void {
    // A UTF-16 code unit takes at most 3 bytes in UTF-8.
    const most = s.length * 3;
    if (this.buf.length - this.pos < most) {
      this.handOver();
      if (most > LARGEST_PIECE_BYTES) {
        const b = Buffer.from(s, 'utf8');
        this.bytes += b.length;
        this.z.write(b);
        this.handedOver = true;
        return;
      }
      this.buf = this.nextPiece(most);
    }
    this.pos += this.buf.write(s, this.pos);
  }

  /** Yields to the event loop after a piece was handed over; waits when compression lags. */
  async breathe(): Promise<void> {
    if (!this.handedOver) return;
    this.handedOver = false;
    if (this.z.writableLength > BACKLOG_BYTES) await once(this.z, 'drain');
    else await new Promise<void>((resolve) => setImmediate(resolve));
  }

  async finish(): Promise<{ gzip: Buffer; bytes: number }> {
    this.handOver();
    this.z.end();
    await this.ended;
    return { gzip: Buffer.concat(this.out), bytes: this.bytes };
  }

  /** A piece twice the last one (or `bytes` long, if longer), a spare one when that is large enough. */
  private nextPiece(bytes: number): Buffer {
    this.size = Math.min(Math.max(this.size * 2, FIRST_PIECE_BYTES, bytes), LARGEST_PIECE_BYTES);
    const spare = this.spare.pop();
    return spare !== undefined && spare.length >= this.size ? spare : Buffer.allocUnsafe(this.size);
  }

  private handOver(): void {
    if (this.pos === 0) return;
    // The stream holds the piece until it has compressed it; then it can be written over.
    const piece = this.buf;
    this.z.write(piece.subarray(0, this.pos), () => this.spare.push(piece));
    this.bytes += this.pos;
    this.handedOver = true;
    this.buf = EMPTY;
    this.pos = 0;
  }
}

/** A body held only compressed: `text` inflates it on demand (tests, --once), HTTP serves `gzip`. */
export function gzipOnlyBody(contentType: string, gzip: Buffer, bytes: number): Body {
  return {
    contentType,
    gzip,
    inflatedBytes: bytes,
    get text(): string {
      return gunzipSync(gzip).toString('utf8');
    },
  };
}

const INVALID_NAME_CHARS = /[^a-z0-9_]/gi;
const REPEATED_UNDERSCORES = /_{2,}/g;
const NEEDS_ESCAPE = /[\\\n"]/;

/** PrometheusSerializer's name sanitizing. */
function sanitizeName(name: string): string {
  return name.replace(INVALID_NAME_CHARS, '_').replace(REPEATED_UNDERSCORES, '_');
}

function escapeText(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** Whether a label value holds a backslash, a newline or a quote (a loop beats a regex call on short values). */
function needsEscape(v: string): boolean {
  if (v.length > 64) return NEEDS_ESCAPE.test(v);
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c === 0x5c || c === 0x0a || c === 0x22) return true;
  }
  return false;
}

/** PrometheusSerializer's label value escaping (non-strings as JSON, undefined as empty). */
function labelValue(v: unknown): string {
  if (typeof v === 'string') return needsEscape(v) ? escapeText(v).replace(/"/g, '\\"') : v;
  if (v === undefined) return '';
  return escapeText(JSON.stringify(v)).replace(/"/g, '\\"');
}

function valueText(value: number): string {
  return value === Infinity ? '+Inf' : value === -Infinity ? '-Inf' : `${value}`;
}

interface FamilyHeader {
  readonly name: string;
  readonly text: string;
}

const headers = new WeakMap<MetricSpec, FamilyHeader | null>();

/** Name and HELP/UNIT/TYPE lines of a counter, gauge or up-down counter family; null when unnameable. */
function familyHeader(spec: MetricSpec): FamilyHeader | null {
  let h = headers.get(spec);
  if (h !== undefined) return h;
  let name = sanitizeName(escapeText(spec.name));
  if (name === '' || name === '_') {
    diag.error(`Normalization for metric "${spec.name}" resulted in an invalid name: "${name}"`);
    h = null;
  } else {
    if (name[0] !== undefined && name[0] >= '0' && name[0] <= '9') name = `_${name}`;
    if (spec.kind === 'counter' && !name.endsWith('_total')) name += '_total';
    const type = spec.kind === 'counter' ? 'counter' : 'gauge';
    const unit = spec.unit ? `\n# UNIT ${name} ${escapeText(spec.unit)}` : '';
    h = {
      name,
      text: `# HELP ${name} ${escapeText(spec.description || 'description missing')}${unit}\n# TYPE ${name} ${type}\n`,
    };
  }
  headers.set(spec, h);
  return h;
}

/**
 * Writes the families as PrometheusSerializer does (no timestamps, no scope labels, attributes
 * in their objects' key order); histograms go through `histogram`. A family without points is
 * left out. Returns the number of series written.
 */
export async function writeFamilies(
  out: GzipWriter,
  families: readonly AnyFamily[],
  histogram: (fam: Family) => string,
): Promise<number> {
  const labelPrefixes = new Map<string, string>();
  let series = 0;
  for (const fam of families) {
    if (!('lazy' in fam) && fam.spec.kind === 'histogram') {
      if (fam.points.length === 0) continue;
      out.write(histogram(fam));
      series += fam.points.length;
      continue;
    }
    const header = familyHeader(fam.spec);
    if (header === null) continue;
    const name = header.name;
    // Lines are gathered into strings of ~64 KB: one buffer write each, not one per series.
    let lines = '';
    let written = 0;
    for (const p of ('lazy' in fam ? fam.lazy : fam.points) as Iterable<Point>) {
      if (written++ === 0) out.write(header.text);
      let line = name;
      let sep = '{';
      const attributes = p.attributes;
      for (const key in attributes) {
        let prefix = labelPrefixes.get(key);
        if (prefix === undefined) {
          prefix = `${sanitizeName(key)}="`;
          labelPrefixes.set(key, prefix);
        }
        line += sep + prefix + labelValue(attributes[key]) + '"';
        sep = ',';
      }
      lines += `${sep === ',' ? line + '}' : line} ${valueText(Number(p.value))}\n`;
      if (lines.length >= 65536) {
        out.write(lines);
        lines = '';
        await out.breathe();
      }
    }
    out.write(lines);
    series += written;
  }
  return series;
}
