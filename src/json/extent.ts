/**
 * Where a JSON value ends, found by string state (quotes, backslash escapes) and bracket depth
 * only: nothing inside the value is validated (whoever parses its bytes does that), so the loop
 * is the fastest the bytes allow. Two forms: resumable across chunks (Extent, for the stream's
 * raw values) and within one buffer (valueEnd, for the member picker).
 */
import { Byte, endsScalar, isWhitespace } from './bytes.js';

const enum Shape {
  Container,
  String,
  Scalar,
}

/** The extent of one value being scanned, kept between chunks. */
export class Extent {
  private shape = Shape.Container;
  private depth = 0;
  private inString = false;
  private escape = false;

  /** Starts at the value's first byte `c` (scanned: the next byte is the value's second). */
  begin(c: number): void {
    this.shape =
      c === Byte.Quote ? Shape.String : c === Byte.OpenBrace || c === Byte.OpenBracket ? Shape.Container : Shape.Scalar;
    this.depth = this.shape === Shape.Container ? 1 : 0;
    this.inString = this.shape === Shape.String;
    this.escape = false;
  }

  /** The index just past the value (a scalar: at the byte that ends it), or -1 when `buf` ends first. */
  scan(buf: Uint8Array, start: number, n: number): number {
    if (this.shape === Shape.Scalar) {
      for (let i = start; i < n; i++) if (endsScalar(buf[i] as number)) return i;
      return -1;
    }
    let i = start;
    let depth = this.depth;
    let inString = this.inString;
    const isString = this.shape === Shape.String;
    if (inString && this.escape) {
      // The chunk before ended on a backslash: this byte is escaped.
      this.escape = false;
      i++;
    }
    while (i < n) {
      if (inString) {
        // Inside a string only a quote or a backslash matters.
        let c = 0;
        while (i < n) {
          c = buf[i++] as number;
          if (c === Byte.Quote || c === Byte.Backslash) break;
        }
        if (c === Byte.Backslash) {
          if (i >= n) {
            this.escape = true;
            break;
          }
          i++;
          continue;
        }
        if (c !== Byte.Quote) break;
        if (isString) return i;
        inString = false;
        continue;
      }
      const c = buf[i++] as number;
      if (c === Byte.Quote) inString = true;
      else if (c === Byte.OpenBrace || c === Byte.OpenBracket) depth++;
      else if ((c === Byte.CloseBrace || c === Byte.CloseBracket) && --depth === 0) return i;
    }
    this.depth = depth;
    this.inString = inString;
    return -1;
  }
}

export function skipWhitespace(src: Uint8Array, i: number, end: number): number {
  while (i < end && isWhitespace(src[i] as number)) i++;
  return i;
}

/**
 * The index just past the value starting at i, or -1 when it does not end before `end`. A scalar
 * holding a quote or a bracket is refused (-1), so that where this succeeds it ends exactly where
 * Extent does.
 */
export function valueEnd(src: Uint8Array, i: number, end: number): number {
  const first = src[i];
  if (first === Byte.Quote) {
    for (i++; i < end; i++) {
      const c = src[i] as number;
      if (c === Byte.Quote) return i + 1;
      if (c === Byte.Backslash) i++;
    }
    return -1;
  }
  if (first === Byte.OpenBrace || first === Byte.OpenBracket) {
    let depth = 1;
    for (i++; i < end; i++) {
      const c = src[i] as number;
      if (c === Byte.Quote) {
        for (i++; i < end; i++) {
          const s = src[i] as number;
          if (s === Byte.Quote) break;
          if (s === Byte.Backslash) i++;
        }
      } else if (c === Byte.OpenBrace || c === Byte.OpenBracket) depth++;
      else if ((c === Byte.CloseBrace || c === Byte.CloseBracket) && --depth === 0) return i + 1;
    }
    return -1;
  }
  const start = i;
  for (; i < end; i++) {
    const c = src[i] as number;
    if (endsScalar(c)) break;
    if (c === Byte.Quote || c === Byte.OpenBrace || c === Byte.OpenBracket) return -1;
  }
  return i > start && i < end ? i : -1;
}
