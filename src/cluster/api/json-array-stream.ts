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

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
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
  private readonly picker: MemberPicker | undefined;

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
    this.picker = opts.keepMembers === undefined ? undefined : new MemberPicker(opts.keepMembers);
  }

  write(chunk: Uint8Array): void {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    this.bytes += buf.length;
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
        return this.expect(buf, i, COLON, Mode.Value, 'a ":" after a member name');
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
    if (c !== OPEN_BRACE) throw this.unexpected(buf, i, 'a JSON object ("{")');
    this.mode = Mode.KeyOrEnd;
    return i + 1;
  }

  private expectKey(buf: Buffer, i: number): number {
    const c = buf[i] as number;
    if (isWhitespace(c)) return i + 1;
    if (c === CLOSE_BRACE && this.mode === Mode.KeyOrEnd) {
      this.mode = Mode.Done;
      return i + 1;
    }
    if (c !== QUOTE) throw this.unexpected(buf, i, 'a member name');
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
      const isArray = c === OPEN_BRACKET;
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
    if (c === COMMA) this.mode = Mode.Key;
    else if (c === CLOSE_BRACE) this.mode = Mode.Done;
    else throw this.unexpected(buf, i, '"," or "}" after a member');
    return i + 1;
  }

  private startElement(buf: Buffer, i: number): number {
    const c = buf[i] as number;
    if (isWhitespace(c)) return i + 1;
    if (c === CLOSE_BRACKET && this.mode === Mode.ElementOrEnd) {
      this.mode = Mode.AfterMember;
      return i + 1;
    }
    if (c === COMMA || c === CLOSE_BRACKET || c === CLOSE_BRACE || c === COLON) {
      throw this.unexpected(buf, i, `an element of "${this.arrayKey}"`);
    }
    if (this.picker !== undefined && c === OPEN_BRACE) {
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
    if (c === COMMA) this.mode = Mode.Element;
    else if (c === CLOSE_BRACKET) this.mode = Mode.AfterMember;
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
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      this.beginValue(ValueKind.Container, false);
      this.depth = 1;
    } else if (c === QUOTE) {
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
          if (c === QUOTE || c === BACKSLASH) break;
        }
        if (c === BACKSLASH) {
          if (i >= n) {
            this.escape = true;
            break;
          }
          i++;
          continue;
        }
        if (c !== QUOTE) break;
        if (isString) return i;
        inString = false;
        continue;
      }
      const c = buf[i++] as number;
      if (c === QUOTE) inString = true;
      else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
      else if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && --depth === 0) return i;
    }
    this.depth = depth;
    this.inString = inString;
    return -1;
  }

  /** A number, true, false or null ends at the first delimiter (which is not part of it). */
  private scanScalar(buf: Buffer, i: number, n: number): number {
    for (; i < n; i++) {
      const c = buf[i] as number;
      if (c === COMMA || c === CLOSE_BRACKET || c === CLOSE_BRACE || isWhitespace(c)) return i;
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

/**
 * Convenience wrapper: feeds an async byte source (an HTTP response body, a file stream) through
 * a splitter and returns the top-level members once the body is complete.
 */
export async function splitJsonArray(
  source: AsyncIterable<Uint8Array>,
  opts: JsonArraySplitterOptions,
): Promise<SplitResult> {
  const splitter = new JsonArraySplitter(opts);
  for await (const chunk of source) splitter.write(chunk);
  return splitter.end();
}
