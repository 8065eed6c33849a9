/**
 * One JSON text read in one pass as its chunks arrive, validated as JSON.parse would validate it,
 * holding nothing of a chunk once it returned: only the token in progress (a string or number
 * split by a chunk boundary, at most `maxText` bytes of it, the rest not built), the nesting (at
 * most `maxDepth` deep) and, for a raw value, its bytes so far. Linear in the text, whatever it
 * holds.
 *
 * What is built is the reader's choice, value by value (JsonReader.value): a value is followed
 * (its keys, scalars and the end of a container are handed to the reader), skipped (checked,
 * nothing built, the reader told when it ends), or raw (its extent found by string state and
 * bracket depth only, not validated, and its bytes handed on whole for JSON.parse). The node agent
 * follows the rdma tool's array of flat objects (entries.ts); the cluster agent follows
 * slurmrestd's envelope and takes the elements of its big array raw (splitter.ts).
 *
 * Chunks are bytes (UTF-8, split anywhere: a multi-byte character split between two chunks is
 * decoded whole, since text is built from bytes) or strings (turned into bytes; a surrogate pair
 * split between two string chunks is kept together). A UTF-8 byte order mark may precede the text.
 */
import { Byte, isDigit, isHex, isSimpleEscape, isWhitespace } from './bytes.js';
import { Extent } from './extent.js';
import { numberComplete, NumAt, stepNumber } from './grammar.js';

export class JsonStreamError extends Error {
  override readonly name = 'JsonStreamError';
}

/** How a value is read (JsonReader.value's answer). */
export const enum Read {
  /** Its keys, scalars and end are handed to the reader. */
  Follow,
  /** Checked, not built; JsonReader.skipped() when it ends. */
  Skip,
  /** Its bytes found by extent and handed on (JsonReader.raw), not validated. */
  Raw,
  /** Not acceptable here: the text is refused (JsonReader.expects says what was). */
  Refuse,
}

/** A scalar handed to the reader: its text is the string's value, or the number as written. */
export const enum Scalar {
  String,
  Number,
  Literal,
}

export interface JsonReader {
  /**
   * How to read the value starting with byte `c`, in the innermost followed container (`depth`
   * containers are open; 0: the root value). Asked once per value, before any of it is read.
   */
  value(c: number, depth: number): Read;
  /** A key of a followed object; undefined when over maxText bytes. */
  key(text: string | undefined): void;
  /** A followed scalar; `text` undefined for a literal or over maxText bytes. */
  scalar(kind: Scalar, text: string | undefined): void;
  /** A followed container closed. */
  close(): void;
  /** A skipped value ended. */
  skipped(): void;
  /** A raw value, whole. The buffer may be a view into a chunk: read it during the call. */
  raw(bytes: Buffer): void;
  /** Bytes of a raw value collected so far (one call per chunk it spans): the reader may refuse. */
  rawGrown?(bytes: number): void;
  /**
   * A raw value that may end within this chunk, taken in one pass: the index past it, or -1 to
   * read it the general way (found by extent, then raw()).
   */
  rawQuick?(buf: Buffer, start: number, limit: number): number;
  /** What was expected where value() refused. */
  expects(): string;
  /** Where the text is, for an error at its end (e.g. `in "jobs" after 12 elements`). */
  where?(): string;
}

export interface StreamLimits {
  /** Longest string or number text built (bytes as written); default 4096. */
  readonly maxText?: number;
  /** Deepest nesting: containers open around a value; default 32. */
  readonly maxDepth?: number;
}

/** What the stream holds between two chunks (the memory tests count it). */
export interface Held {
  /** Bytes of token text held now (a string or number split by the chunk boundary). */
  readonly chars: number;
  /** The most bytes of token text held between two chunks so far. */
  readonly maxChars: number;
  /** Open containers now, and the most so far. */
  readonly depth: number;
  readonly maxDepth: number;
}

/** Lexer states between chunks. */
const enum Lex {
  Between,
  Str,
  StrEscape,
  StrUnicode,
  Num,
  Lit,
  Raw,
}

/** What an open container expects next (its frame holds `want << 1 | isObject`). */
const enum Want {
  First, // a value (a key in an object) or the close
  Item, // a value (a key) after a comma
  Colon,
  Value, // an object's value after its colon
  Next, // a comma or the close
}

/** How the scalar (or key) in progress is reported. */
const enum Report {
  None, // inside a skipped container
  Skipped,
  Followed,
}

const BOM = [0xef, 0xbb, 0xbf];
const NATIVE_COPY_BYTES = 64;
const LITERALS: Readonly<Record<number, string>> = {
  [Byte.LowerT]: 'true',
  [Byte.LowerF]: 'false',
  [Byte.LowerN]: 'null',
};

export class JsonStream {
  private readonly maxText: number;
  private readonly maxDepth: number;
  private readonly frames: number[] = [];
  /** The depth of the outermost skipped container (0: none). */
  private skipFrom = 0;
  private rootDone = false;
  private lex = Lex.Between;
  private bytes = 0;
  private chunkStart = 0;
  private bomAt = 0;
  private pendingHigh = '';
  // The token in progress.
  private report = Report.None;
  private isKey = false;
  private text = Buffer.allocUnsafe(256);
  private textLength = 0;
  private textLong = false;
  private escaped = false;
  private unicodeDigits = 0;
  private numAt = NumAt.Start;
  private lit = '';
  private litAt = 0;
  // A raw value in progress.
  private readonly extent = new Extent();
  private pieces: Buffer[] = [];
  private pieceBytes = 0;
  private maxChars = 0;
  private deepest = 0;
  private readonly cache = new TextCache();

  constructor(
    private readonly reader: JsonReader,
    limits: StreamLimits = {},
  ) {
    this.maxText = limits.maxText ?? 4096;
    this.maxDepth = limits.maxDepth ?? 32;
  }

  /** Bytes read so far. */
  get offset(): number {
    return this.bytes;
  }

  get held(): Held {
    return { chars: this.textLength, maxChars: this.maxChars, depth: this.frames.length, maxDepth: this.deepest };
  }

  /** Reads the next piece of text; throws JsonStreamError at the first error. */
  push(chunk: Uint8Array | string): void {
    const buf = typeof chunk === 'string' ? this.encode(chunk) : toBuffer(chunk);
    this.chunkStart = this.bytes;
    this.bytes += buf.length;
    let i = 0;
    const n = buf.length;
    while (i < n) {
      if (this.lex === Lex.Between) i = this.between(buf, i);
      else if (this.lex === Lex.Raw) i = this.inRaw(buf, i, 0);
      else if (this.lex === Lex.Str) i = this.inString(buf, i);
      else if (this.lex === Lex.StrEscape) i = this.escape(buf, i);
      else if (this.lex === Lex.StrUnicode) i = this.unicodeDigit(buf, i);
      else if (this.lex === Lex.Num) i = this.inNumber(buf, i);
      else i = this.inLiteral(buf, i);
    }
    if (this.textLength > this.maxChars) this.maxChars = this.textLength;
  }

  /** The text ended: throws unless it was one whole value. */
  end(): void {
    if (this.pendingHigh !== '') {
      const last = Buffer.from(this.pendingHigh, 'utf8');
      this.pendingHigh = '';
      this.push(last);
    }
    if (this.lex === Lex.Num) this.endNumber(this.bytes);
    if (this.rootDone) return;
    const what =
      this.lex === Lex.Str || this.lex === Lex.StrEscape || this.lex === Lex.StrUnicode
        ? 'unterminated string'
        : this.lex === Lex.Lit
          ? 'unterminated literal'
          : this.lex === Lex.Raw
            ? 'unterminated value'
            : this.frames.length === 0
              ? 'no value'
              : 'unclosed container';
    const where = this.reader.where?.();
    throw new JsonStreamError(
      `truncated JSON: the text ended (${what}${where ? `, ${where}` : ''}) after ${this.bytes} bytes`,
    );
  }

  /** A string chunk as bytes; a high surrogate at its end waits for the next chunk's low one. */
  private encode(chunk: string): Buffer {
    let s = this.pendingHigh + chunk;
    this.pendingHigh = '';
    const last = s.charCodeAt(s.length - 1);
    if (last >= 0xd800 && last <= 0xdbff) {
      this.pendingHigh = s.slice(-1);
      s = s.slice(0, -1);
    }
    return Buffer.from(s, 'utf8');
  }

  private fail(what: string, at: number): never {
    throw new JsonStreamError(`${what} at byte ${this.chunkStart + at}`);
  }

  private unexpected(buf: Buffer, at: number, expected: string): never {
    const c = buf[at] as number;
    const shown = c >= 0x20 && c < 0x7f ? `"${String.fromCharCode(c)}"` : `byte 0x${c.toString(16)}`;
    throw new JsonStreamError(`unexpected ${shown} at byte ${this.chunkStart + at}: expected ${expected}`);
  }

  private between(buf: Buffer, start: number): number {
    let i = start;
    const n = buf.length;
    while (i < n && isWhitespace(buf[i] as number)) i++;
    if (i === n) return i;
    const c = buf[i] as number;
    if (this.frames.length === 0) {
      if (this.rootDone) this.unexpected(buf, i, 'nothing after the root value');
      if (this.bomAt < 3 && c === BOM[this.bomAt] && this.chunkStart + i === this.bomAt) {
        this.bomAt++;
        return i + 1;
      }
      return this.startValue(buf, i, c);
    }
    const top = this.frames[this.frames.length - 1] as number;
    const want = (top >> 1) as Want;
    const isObject = (top & 1) === 1;
    if (c === Byte.CloseBrace || c === Byte.CloseBracket) {
      if ((c === Byte.CloseBrace) !== isObject || (want !== Want.First && want !== Want.Next))
        this.unexpected(buf, i, this.expected(want, isObject));
      this.close();
      return i + 1;
    }
    if (want === Want.Next) {
      if (c !== Byte.Comma) this.unexpected(buf, i, this.expected(want, isObject));
      this.setWant(Want.Item);
      return i + 1;
    }
    if (want === Want.Colon) {
      if (c !== Byte.Colon) this.unexpected(buf, i, this.expected(want, isObject));
      this.setWant(Want.Value);
      return i + 1;
    }
    if (isObject && want !== Want.Value) {
      if (c !== Byte.Quote) this.unexpected(buf, i, 'a member name');
      this.startText(Lex.Str, this.skipFrom === 0 ? Report.Followed : Report.None, true);
      return i + 1;
    }
    if (c === Byte.Comma || c === Byte.Colon) this.unexpected(buf, i, 'a value');
    return this.startValue(buf, i, c);
  }

  private expected(want: Want, isObject: boolean): string {
    const close = isObject ? '"}"' : '"]"';
    if (want === Want.Next) return `"," or ${close}`;
    if (want === Want.Colon) return '":"';
    return want === Want.First ? `a value or ${close}` : 'a value';
  }

  private setWant(want: Want): void {
    const last = this.frames.length - 1;
    this.frames[last] = (want << 1) | ((this.frames[last] as number) & 1);
  }

  /** A value starts at `i` with byte `c`. */
  private startValue(buf: Buffer, i: number, c: number): number {
    const depth = this.frames.length;
    if (depth > this.maxDepth) this.fail('nested too deep', i);
    const how = this.skipFrom !== 0 ? Read.Skip : this.reader.value(c, depth);
    if (how === Read.Refuse) this.unexpected(buf, i, this.reader.expects());
    if (how === Read.Raw) return this.startRaw(buf, i, c);
    if (c === Byte.OpenBrace || c === Byte.OpenBracket) {
      this.frames.push((Want.First << 1) | (c === Byte.OpenBrace ? 1 : 0));
      if (this.frames.length > this.deepest) this.deepest = this.frames.length;
      if (how === Read.Skip && this.skipFrom === 0) this.skipFrom = this.frames.length;
      return i + 1;
    }
    const report = this.skipFrom !== 0 ? Report.None : how === Read.Follow ? Report.Followed : Report.Skipped;
    if (c === Byte.Quote) {
      this.startText(Lex.Str, report);
      return i + 1;
    }
    if (c === Byte.Minus || isDigit(c)) {
      this.startText(Lex.Num, report);
      this.numAt = NumAt.Start;
      return i; // the number's states read its first byte
    }
    const lit = LITERALS[c];
    if (lit === undefined) this.unexpected(buf, i, 'a value');
    this.report = report;
    this.isKey = false;
    this.lex = Lex.Lit;
    this.lit = lit;
    this.litAt = 0;
    return i;
  }

  private startText(lex: Lex, report: Report, isKey = false): void {
    this.lex = lex;
    this.isKey = isKey;
    this.report = report;
    this.textLength = 0;
    this.textLong = false;
    this.escaped = false;
  }

  private append(buf: Buffer, from: number, to: number): void {
    if (this.report < Report.Followed || this.textLong || to === from) return;
    const length = this.textLength + to - from;
    if (length > this.maxText) {
      this.textLong = true;
      this.textLength = 0;
      return;
    }
    if (length > this.text.length) {
      const bigger = Buffer.allocUnsafe(Math.min(this.maxText, Math.max(length, this.text.length * 2)));
      this.text.copy(bigger, 0, 0, this.textLength);
      this.text = bigger;
    }
    // Most tokens are short: a byte loop is cheaper than a call into Buffer.copy.
    if (to - from > NATIVE_COPY_BYTES) buf.copy(this.text, this.textLength, from, to);
    else for (let k = from, o = this.textLength; k < to; k++, o++) this.text[o] = buf[k] as number;
    this.textLength = length;
  }

  private inString(buf: Buffer, start: number): number {
    let i = start;
    const n = buf.length;
    for (; i < n; i++) {
      const c = buf[i] as number;
      if (c === Byte.Quote || c === Byte.Backslash) break;
      if (c < 0x20) this.fail('control character in a string', i);
    }
    if (i === n) {
      this.append(buf, start, n);
      return n;
    }
    if (buf[i] === Byte.Backslash) {
      this.append(buf, start, i + 1);
      this.escaped = true;
      this.lex = Lex.StrEscape;
      return i + 1;
    }
    this.append(buf, start, i);
    this.lex = Lex.Between;
    this.endScalar(Scalar.String);
    return i + 1;
  }

  private escape(buf: Buffer, i: number): number {
    const c = buf[i] as number;
    if (c === Byte.LowerU) {
      this.lex = Lex.StrUnicode;
      this.unicodeDigits = 0;
    } else {
      if (!isSimpleEscape(c)) this.fail('bad escape', i);
      this.lex = Lex.Str;
    }
    this.append(buf, i, i + 1);
    return i + 1;
  }

  private unicodeDigit(buf: Buffer, i: number): number {
    if (!isHex(buf[i] as number)) this.fail('bad \\u escape', i);
    this.append(buf, i, i + 1);
    if (++this.unicodeDigits === 4) this.lex = Lex.Str;
    return i + 1;
  }

  private inNumber(buf: Buffer, start: number): number {
    let i = start;
    const n = buf.length;
    for (; i < n; i++) {
      const next = stepNumber(this.numAt, buf[i] as number);
      if (next === undefined) break;
      this.numAt = next;
    }
    this.append(buf, start, i);
    if (i < n) this.endNumber(this.chunkStart + i);
    return i;
  }

  private endNumber(at: number): void {
    if (!numberComplete(this.numAt)) throw new JsonStreamError(`bad number at byte ${at}`);
    this.lex = Lex.Between;
    this.endScalar(Scalar.Number);
  }

  private inLiteral(buf: Buffer, start: number): number {
    let i = start;
    const n = buf.length;
    while (i < n && this.litAt < this.lit.length) {
      if (buf[i] !== this.lit.charCodeAt(this.litAt)) this.unexpected(buf, i, `"${this.lit}"`);
      i++;
      this.litAt++;
    }
    if (this.litAt === this.lit.length) {
      this.lex = Lex.Between;
      this.endScalar(Scalar.Literal);
    }
    return i;
  }

  /** The text built of the token that ended (undefined when too long or not built). */
  private takeText(kind: Scalar): string | undefined {
    if (this.report < Report.Followed || this.textLong || kind === Scalar.Literal) return undefined;
    const raw = this.cache.decode(this.text, this.textLength);
    this.textLength = 0;
    // Escapes were checked as they came: JSON.parse only decodes them.
    return this.escaped ? (JSON.parse(`"${raw}"`) as string) : raw;
  }

  private endScalar(kind: Scalar): void {
    const report = this.report;
    if (this.isKey) {
      this.setWant(Want.Colon);
      if (report === Report.Followed) this.reader.key(this.takeText(kind));
      return;
    }
    if (report === Report.Followed) this.reader.scalar(kind, this.takeText(kind));
    else if (report === Report.Skipped) this.reader.skipped();
    this.textLength = 0;
    this.valueEnded();
  }

  private close(): void {
    const depth = this.frames.length;
    this.frames.pop();
    if (this.skipFrom === depth) {
      this.skipFrom = 0;
      this.reader.skipped();
    } else if (this.skipFrom === 0) this.reader.close();
    this.valueEnded();
  }

  private valueEnded(): void {
    if (this.frames.length === 0) this.rootDone = true;
    else this.setWant(Want.Next);
  }

  private startRaw(buf: Buffer, i: number, c: number): number {
    const quick = this.reader.rawQuick?.(buf, i, buf.length) ?? -1;
    if (quick >= 0) {
      this.valueEnded();
      return quick;
    }
    this.lex = Lex.Raw;
    this.extent.begin(c);
    this.pieces = [];
    this.pieceBytes = 0;
    return this.inRaw(buf, i + 1, i);
  }

  /** Scans a raw value from i; `from` is where its bytes start in this chunk. */
  private inRaw(buf: Buffer, i: number, from: number): number {
    const end = this.extent.scan(buf, i, buf.length);
    if (end < 0) {
      this.pieceBytes += buf.length - from;
      this.reader.rawGrown?.(this.pieceBytes);
      this.pieces.push(Buffer.from(buf.subarray(from)));
      return buf.length;
    }
    const tail = buf.subarray(from, end);
    const bytes = this.pieces.length === 0 ? tail : Buffer.concat([...this.pieces, tail]);
    this.pieces = [];
    this.pieceBytes = 0;
    this.lex = Lex.Between;
    this.reader.raw(bytes);
    this.valueEnded();
    return end;
  }
}

/**
 * Short texts seen before, by length and first and last bytes: keys repeat in every element (and
 * many values do), and a hit costs a comparison of a few bytes instead of building a string.
 */
const SHORT_TEXT = 24;
const CACHE_SLOTS = 256;

class TextCache {
  private readonly bytes: (Buffer | undefined)[] = new Array<Buffer | undefined>(CACHE_SLOTS);
  private readonly texts: string[] = new Array<string>(CACHE_SLOTS);

  decode(text: Buffer, length: number): string {
    if (length > SHORT_TEXT || length === 0) return text.toString('utf8', 0, length);
    const slot = (length * 7 + (text[0] as number) * 3 + (text[length - 1] as number)) & (CACHE_SLOTS - 1);
    const seen = this.bytes[slot];
    if (seen !== undefined && seen.length === length) {
      let k = 0;
      while (k < length && seen[k] === text[k]) k++;
      if (k === length) return this.texts[slot] as string;
    }
    const decoded = text.toString('utf8', 0, length);
    this.bytes[slot] = Buffer.from(text.subarray(0, length));
    this.texts[slot] = decoded;
    return decoded;
  }
}

function toBuffer(chunk: Uint8Array): Buffer {
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}
