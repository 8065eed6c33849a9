/**
 * The member picker behind the splitter's `keepMembers`: copies the wanted top-level members of a
 * JSON object out of its bytes without decoding the rest.
 */
import {
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  isWhitespace,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
} from './json-bytes.js';

/**
 * Copies the members of a JSON object whose names are in a fixed set into a new, smaller JSON
 * object text. Only the object's top level is interpreted: each member's value is skipped by
 * string state and bracket depth, like the splitter does, and copied byte for byte when kept.
 */
export class MemberPicker {
  private readonly names: Buffer[] = [];
  /** Open-addressing table: key hash → index + 1 into names (0 = empty slot). */
  private readonly slots: Int32Array;
  private readonly hashes: Int32Array;
  private readonly mask: number;
  private out: Buffer = Buffer.allocUnsafe(16 * 1024);
  private outLength = 0;

  constructor(names: Iterable<string>) {
    const unique = [...new Set(names)];
    let size = 16;
    while (size < unique.length * 4) size *= 2;
    this.mask = size - 1;
    this.slots = new Int32Array(size);
    this.hashes = new Int32Array(size);
    for (const name of unique) {
      const b = Buffer.from(name, 'utf8');
      let h = 0;
      for (let i = 0; i < b.length; i++) h = (Math.imul(h, 31) + (b[i] as number)) | 0;
      let slot = h & this.mask;
      while (this.slots[slot] !== 0) slot = (slot + 1) & this.mask;
      this.names.push(b);
      this.slots[slot] = this.names.length;
      this.hashes[slot] = h;
    }
  }

  /**
   * The kept members of the object in `src`, as a view into a buffer reused by the next call; or
   * undefined when `src` is not an object that scans cleanly (hand it on whole then).
   */
  pick(src: Buffer): Buffer | undefined {
    const i = skipWhitespace(src, 0, src.length);
    const end = this.scan(src, i, src.length);
    return end >= 0 && skipWhitespace(src, end, src.length) === src.length ? this.picked() : undefined;
  }

  /** What the last successful scan() kept (a view, valid until the next scan). */
  picked(): Buffer {
    return this.out.subarray(0, this.outLength);
  }

  /**
   * Scans the object starting at `start` (its "{"), keeping the wanted members for picked().
   * Returns the index just past its closing "}", or -1 when the object does not end before
   * `limit` or is not one this scanner reads (then nothing is kept). Where it succeeds it ends
   * exactly where the splitter's string-and-depth scan would: scalars may not contain quotes or
   * brackets, everything else is scanned the same way.
   */
  scan(src: Buffer, start: number, limit: number): number {
    if (src[start] !== OPEN_BRACE) return -1;
    let out = this.out;
    out[0] = OPEN_BRACE;
    let o = 1;
    let i = skipWhitespace(src, start + 1, limit);
    if (src[i] === CLOSE_BRACE) i++;
    else {
      for (;;) {
        if (src[i] !== QUOTE) return -1;
        const keyStart = i++;
        let h = 0;
        let escaped = false;
        for (; i < limit; i++) {
          const c = src[i] as number;
          if (c === QUOTE) break;
          if (c === BACKSLASH) {
            escaped = true;
            i++;
          } else h = (Math.imul(h, 31) + c) | 0;
        }
        if (i >= limit) return -1;
        const keyEnd = i++;
        i = skipWhitespace(src, i, limit);
        if (src[i] !== COLON) return -1;
        i = skipWhitespace(src, i + 1, limit);
        const valueEnd = skipValue(src, i, limit);
        if (valueEnd < 0) return -1;
        if (escaped || this.has(h, src, keyStart + 1, keyEnd)) {
          if (o + (valueEnd - keyStart) + 2 > out.length) {
            const bigger = Buffer.allocUnsafe(Math.max(out.length * 2, o + (valueEnd - keyStart) + 2));
            out.copy(bigger, 0, 0, o);
            this.out = out = bigger;
          }
          if (o > 1) out[o++] = COMMA;
          for (let k = keyStart; k < valueEnd; k++) out[o++] = src[k] as number;
        }
        i = skipWhitespace(src, valueEnd, limit);
        const c = src[i];
        if (c === COMMA) {
          i = skipWhitespace(src, i + 1, limit);
          continue;
        }
        if (c !== CLOSE_BRACE) return -1;
        i++;
        break;
      }
    }
    out[o++] = CLOSE_BRACE;
    this.outLength = o;
    return i;
  }

  private has(h: number, src: Buffer, from: number, to: number): boolean {
    let slot = h & this.mask;
    for (
      let idx = this.slots[slot] as number;
      idx !== 0;
      slot = (slot + 1) & this.mask, idx = this.slots[slot] as number
    ) {
      if (this.hashes[slot] !== h) continue;
      const name = this.names[idx - 1] as Buffer;
      if (name.length !== to - from) continue;
      let k = 0;
      while (k < name.length && name[k] === src[from + k]) k++;
      if (k === name.length) return true;
    }
    return false;
  }
}

function skipWhitespace(src: Buffer, i: number, end: number): number {
  while (i < end && isWhitespace(src[i] as number)) i++;
  return i;
}

/** The index just past the value starting at i, or -1 when it does not end before `end`. */
function skipValue(src: Buffer, i: number, end: number): number {
  const first = src[i];
  if (first === QUOTE) {
    for (i++; i < end; i++) {
      const c = src[i] as number;
      if (c === QUOTE) return i + 1;
      if (c === BACKSLASH) i++;
    }
    return -1;
  }
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 1;
    for (i++; i < end; i++) {
      const c = src[i] as number;
      if (c === QUOTE) {
        for (i++; i < end; i++) {
          const s = src[i] as number;
          if (s === QUOTE) break;
          if (s === BACKSLASH) i++;
        }
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
      else if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && --depth === 0) return i + 1;
    }
    return -1;
  }
  const start = i;
  for (; i < end; i++) {
    const c = src[i] as number;
    if (c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || isWhitespace(c)) break;
    if (c === QUOTE || c === OPEN_BRACE || c === OPEN_BRACKET) return -1;
  }
  return i > start && i < end ? i : -1;
}
