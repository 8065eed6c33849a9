/**
 * Streaming splitter for huge slurmrestd responses.
 *
 * A `/jobs/` body for 100k jobs is ~540 MB, beyond V8's maximum string length, so it can neither
 * be read as one string nor given to JSON.parse. This splitter scans the body's bytes as they
 * arrive, finds the elements of one named top-level array (`jobs`, `nodes`) and hands each
 * element's bytes to a callback, which parses that element alone. The other top-level members
 * (`meta`, `errors`, `warnings`, `last_update`, ...) are small: they are collected and parsed
 * normally, so the caller can read `meta` and `errors` at the end.
 *
 * The scanner only tracks what delimits values: string state (quotes and backslash escapes) and
 * bracket depth. It does not validate element contents; the caller's JSON.parse does that, per
 * element, so one bad element costs one element. Structural errors at the top level (not an
 * object, a missing colon, a truncated body) throw JsonStreamError.
 *
 * Chunk boundaries may fall anywhere, including inside a multi-byte UTF-8 character or an
 * escape sequence: an element split across chunks is reassembled from bytes before anything is
 * decoded, and only ASCII bytes are ever structural in UTF-8.
 */

import { Byte, isWhitespace } from './json-bytes.js';
import { createMemberPicker, type Picker } from './member-picker.js';

export class JsonStreamError extends Error {
  override readonly name = 'JsonStreamError';
}

export interface JsonArraySplitterOptions {
  /** Name of the top-level array to stream, e.g. `jobs`. */
  readonly arrayKey: string;
  /**
   * Receives each element's UTF-8 JSON text, in order. The buffer may be a view into the chunk
   * given to write(): parse it during the call, do not keep it.
   */
  readonly onElement: (bytes: Buffer, index: number) => void;
  /**
   * The named member appeared again: as JSON.parse does, the last one wins, so the elements
   * handed on so far are to be dropped (and, when the new value is not an array, none follow).
   */
  readonly onArrayRestart?: () => void;
  /** Refuse a single element larger than this (default 256 MiB). */
  readonly maxElementBytes?: number;
  /** Refuse other top-level members larger than this in total (default 16 MiB). */
  readonly maxMemberBytes?: number;
  /**
   * Keep only these members of each element. When set, an element that is a JSON object is handed
   * to onElement as an object holding just the members named here, in their original order: the
   * others are scanned for their extent only and never decoded, so a caller that reads 30 of a
   * job's 130 members parses about a quarter of the bytes. An element that is not an object, or
   * whose top level does not scan cleanly, is handed on whole (the caller's JSON.parse then says
   * what is wrong with it). Names are compared with the raw bytes of the keys; a key written with
   * escapes is always kept.
   */
  readonly keepMembers?: Iterable<string>;
}

export interface SplitResult {
  /** The other top-level members, parsed (a null-prototype object). */
  readonly members: Readonly<Record<string, unknown>>;
  /** Whether the named member was present and was an array. */
  readonly arrayFound: boolean;
  readonly elements: number;
  readonly bytes: number;
}

/** Where the top-level scanner is. */
const enum Mode {
  BeforeRoot,
  KeyOrEnd,
  Key,
  InKey,
  Colon,
  Value,
  InMember,
  AfterMember,
  ElementOrEnd,
  Element,
  InElement,
  AfterElement,
  Done,
}

/** What kind of value is being scanned. */
const enum ValueKind {
  Container,
  String,
  Scalar,
}

export class JsonArraySplitter {
  private readonly arrayKey: string;
  private readonly onElement: (bytes: Buffer, index: number) => void;
  private readonly onArrayRestart: (() => void) | undefined;
  private readonly maxElementBytes: number;
  private readonly maxMemberBytes: number;
  private readonly picker: Picker | undefined;

  private mode: Mode = Mode.BeforeRoot;
  private members: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  private memberBytes = 0;
  private key = '';
  private arrayFound = false;
  private elements = 0;
  private bytes = 0;
  private sawBom = 0;

  // Value scanner state, kept across chunks.
  private kind: ValueKind = ValueKind.Container;
  private depth = 0;
  private inString = false;
  private escape = false;
  /** Pieces of a value that spans chunks (copied, so the caller may reuse its chunk buffers). */
  private pieces: Buffer[] = [];
  private pieceBytes = 0;

  constructor(opts: JsonArraySplitterOptions) {
    this.arrayKey = opts.arrayKey;
    this.onElement = opts.onElement;
    this.onArrayRestart = opts.onArrayRestart;
    this.maxElementBytes = opts.maxElementBytes ?? 256 * 1024 * 1024;
    this.maxMemberBytes = opts.maxMemberBytes ?? 16 * 1024 * 1024;
    this.picker = opts.keepMembers === undefined ? undefined : createMemberPicker(opts.keepMembers);
  }

  write(chunk: Uint8Array): void {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    this.bytes += buf.length;
    this.picker?.forget();
    let i = 0;
    const n = buf.length;
    while (i < n) i = this.step(buf, i, n);
  }

  /** Declares the body complete; throws when it ended before the root object closed. */
  end(): SplitResult {
    if (this.mode !== Mode.Done) {
      const where = this.mode === Mode.BeforeRoot ? 'before any JSON' : `inside the response (${this.describeMode()})`;
      throw new JsonStreamError(`truncated JSON: body ended ${where} after ${this.bytes} bytes`);
    }
    return { members: this.members, arrayFound: this.arrayFound, elements: this.elements, bytes: this.bytes };
  }

  private describeMode(): string {
    if (
      this.mode === Mode.InElement ||
      this.mode === Mode.Element ||
      this.mode === Mode.AfterElement ||
      this.mode === Mode.ElementOrEnd
    ) {
      return `in "${this.arrayKey}" after ${this.elements} elements`;
    }
    return this.key === '' ? 'in the top-level object' : `near member "${this.key}"`;
  }

  /** Consumes some bytes from position i in the current mode; returns the new position. */
  private step(buf: Buffer, i: number, n: number): number {
    switch (this.mode) {
      case Mode.BeforeRoot:
        return this.beforeRoot(buf, i);
      case Mode.KeyOrEnd:
      case Mode.Key:
        return this.expectKey(buf, i);
      case Mode.InKey:
        return this.continueValue(buf, i, n, false);
      case Mode.Colon:
        return this.expect(buf, i, Byte.Colon, Mode.Value, 'a ":" after a member name');
      case Mode.Value:
        return this.startMemberValue(buf, i);
      case Mode.InMember:
        return this.continueValue(buf, i, n, false);
      case Mode.AfterMember:
        return this.afterMember(buf, i);
      case Mode.ElementOrEnd:
      case Mode.Element:
        return this.startElement(buf, i);
      case Mode.InElement:
        return this.continueValue(buf, i, n, true);
      case Mode.AfterElement:
        return this.afterElement(buf, i);
      case Mode.Done:
        if (!isWhitespace(buf[i] as number)) throw this.unexpected(buf, i, 'nothing after the top-level object');
        return i + 1;
    }
  }

  private unexpected(buf: Buffer, i: number, expected: string): JsonStreamError {
    const c = buf[i] as number;
    const shown = c >= 0x20 && c < 0x7f ? `"${String.fromCharCode(c)}"` : `byte 0x${c.toString(16)}`;
    const offset = this.bytes - buf.length + i;
    return new JsonStreamError(`unexpected ${shown} at byte ${offset}: expected ${expected}`);
  }

  private beforeRoot(buf: Buffer, i: number): number {
    const c = buf[i] as number;
    // A UTF-8 byte order mark is allowed before the root.
    const bom = [0xef, 0xbb, 0xbf];
    if (this.sawBom < 3 && c === bom[this.sawBom] && this.bytes - buf.length + i === this.sawBom) {
      this.sawBom++;
      return i + 1;
    }
    if (isWhitespace(c)) return i + 1;
    if (c !== Byte.OpenBrace) throw this.unexpected(buf, i, 'a JSON object ("{")');
    this.mode = Mode.KeyOrEnd;
    return i + 1;
  }

  private expectKey(buf: Buffer, i: number): number {
    const c = buf[i] as number;
    if (isWhitespace(c)) return i + 1;
    if (c === Byte.CloseBrace && this.mode === Mode.KeyOrEnd) {
      this.mode = Mode.Done;
      return i + 1;
    }
    if (c !== Byte.Quote) throw this.unexpected(buf, i, 'a member name');
    this.mode = Mode.InKey;
    this.beginValue(ValueKind.String, true);
    return this.continueValue(buf, i + 1, buf.length, false, i);
  }

  private expect(buf: Buffer, i: number, want: number, next: Mode, what: string): number {
    const c = buf[i] as number;
    if (isWhitespace(c)) return i + 1;
    if (c !== want) throw this.unexpected(buf, i, what);
    this.mode = next;
    return i + 1;
  }

  private startMemberValue(buf: Buffer, i: number): number {
    const c = buf[i] as number;
    if (isWhitespace(c)) return i + 1;
    if (this.key === this.arrayKey) {
      const isArray = c === Byte.OpenBracket;
      this.restartArray(isArray);
      if (isArray) {
        this.mode = Mode.ElementOrEnd;
        return i + 1;
      }
    }
    this.mode = Mode.InMember;
    return this.startValue(buf, i, false);
  }

  /** A (repeated) member named arrayKey starts: whatever it said before no longer counts. */
  private restartArray(isArray: boolean): void {
    if (this.arrayFound || this.arrayKey in this.members) {
      this.onArrayRestart?.();
      this.elements = 0;
      delete this.members[this.arrayKey];
    }
    this.arrayFound = isArray;
  }

  private afterMember(buf: Buffer, i: number): number {
    const c = buf[i] as number;
    if (isWhitespace(c)) return i + 1;
    if (c === Byte.Comma) this.mode = Mode.Key;
    else if (c === Byte.CloseBrace) this.mode = Mode.Done;
    else throw this.unexpected(buf, i, '"," or "}" after a member');
    return i + 1;
  }

  private startElement(buf: Buffer, i: number): number {
    const c = buf[i] as number;
    if (isWhitespace(c)) return i + 1;
    if (c === Byte.CloseBracket && this.mode === Mode.ElementOrEnd) {
      this.mode = Mode.AfterMember;
      return i + 1;
    }
    if (c === Byte.Comma || c === Byte.CloseBracket || c === Byte.CloseBrace || c === Byte.Colon) {
      throw this.unexpected(buf, i, `an element of "${this.arrayKey}"`);
    }
    if (this.picker !== undefined && c === Byte.OpenBrace) {
      // One pass for the usual element, an object that ends in this chunk: find its end and pick
      // its members at once. Any other element takes the general path (and is picked when whole).
      const end = this.picker.scan(buf, i, buf.length);
      if (end >= 0) {
        this.checkSize(end - i, true);
        this.mode = Mode.AfterElement;
        this.onElement(this.picker.picked(), this.elements++);
        return end;
      }
    }
    this.mode = Mode.InElement;
    return this.startValue(buf, i, true);
  }

  private afterElement(buf: Buffer, i: number): number {
    const c = buf[i] as number;
    if (isWhitespace(c)) return i + 1;
    if (c === Byte.Comma) this.mode = Mode.Element;
    else if (c === Byte.CloseBracket) this.mode = Mode.AfterMember;
    else throw this.unexpected(buf, i, `"," or "]" in "${this.arrayKey}"`);
    return i + 1;
  }

  private beginValue(kind: ValueKind, inString: boolean): void {
    this.kind = kind;
    this.depth = 0;
    this.inString = inString;
    this.escape = false;
    this.pieces = [];
    this.pieceBytes = 0;
  }

  /** Starts scanning the value whose first byte is at i. */
  private startValue(buf: Buffer, i: number, isElement: boolean): number {
    const c = buf[i] as number;
    if (c === Byte.OpenBrace || c === Byte.OpenBracket) {
      this.beginValue(ValueKind.Container, false);
      this.depth = 1;
    } else if (c === Byte.Quote) {
      this.beginValue(ValueKind.String, true);
    } else {
      this.beginValue(ValueKind.Scalar, false);
    }
    return this.continueValue(buf, i + 1, buf.length, isElement, i);
  }

  /**
   * Scans the current value from i. `from` is where its bytes start in this chunk (the value's
   * first byte when it started here, else 0). Returns the position after the value, or n.
   */
  private continueValue(buf: Buffer, i: number, n: number, isElement: boolean, from = i): number {
    const end = this.kind === ValueKind.Scalar ? this.scanScalar(buf, i, n) : this.scanQuotedOrContainer(buf, i, n);
    if (end < 0) {
      this.keepPiece(buf.subarray(from, n), isElement);
      return n;
    }
    this.finishValue(buf, from, end, isElement);
    return end;
  }

  /**
   * The hot loop: tracks string and escape state and bracket depth only. Returns the index just
   * past the value's closing byte, or -1 when the chunk ends first.
   */
  private scanQuotedOrContainer(buf: Uint8Array, start: number, n: number): number {
    let i = start;
    let depth = this.depth;
    let inString = this.inString;
    // A string value ends at its first unescaped quote; a container when its depth returns to 0.
    const isString = this.kind === ValueKind.String;
    if (inString && this.escape) {
      // The previous chunk ended on a backslash: this byte is escaped.
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

  /** A number, true, false or null ends at the first delimiter (which is not part of it). */
  private scanScalar(buf: Buffer, i: number, n: number): number {
    for (; i < n; i++) {
      const c = buf[i] as number;
      if (c === Byte.Comma || c === Byte.CloseBracket || c === Byte.CloseBrace || isWhitespace(c)) return i;
    }
    return -1;
  }

  private keepPiece(piece: Buffer, isElement: boolean): void {
    this.pieceBytes += piece.length;
    this.checkSize(this.pieceBytes, isElement);
    this.pieces.push(Buffer.from(piece));
  }

  private checkSize(size: number, isElement: boolean): void {
    if (isElement && size > this.maxElementBytes) {
      throw new JsonStreamError(`element ${this.elements} of "${this.arrayKey}" exceeds ${this.maxElementBytes} bytes`);
    }
    if (!isElement && this.memberBytes + size > this.maxMemberBytes) {
      throw new JsonStreamError(`top-level members exceed ${this.maxMemberBytes} bytes`);
    }
  }

  private finishValue(buf: Buffer, from: number, end: number, isElement: boolean): void {
    const tail = buf.subarray(from, end);
    const bytes = this.pieces.length === 0 ? tail : Buffer.concat([...this.pieces, tail]);
    this.pieces = [];
    this.pieceBytes = 0;
    this.checkSize(bytes.length, isElement);
    if (isElement) {
      this.mode = Mode.AfterElement;
      const picked = this.picker === undefined ? undefined : this.picker.pick(bytes);
      this.onElement(picked ?? bytes, this.elements++);
    } else if (this.mode === Mode.InKey) {
      this.key = this.parse(bytes) as string;
      this.mode = Mode.Colon;
    } else {
      this.memberBytes += bytes.length;
      this.members[this.key] = this.parse(bytes);
      this.mode = Mode.AfterMember;
    }
  }

  private parse(bytes: Buffer): unknown {
    try {
      return JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      throw new JsonStreamError(`bad JSON in top-level member "${this.key}": ${(err as Error).message}`);
    }
  }
}
