/**
 * A JSON array scanned one element at a time, in one pass, fed in chunks as
 * they arrive: a string, number or escape split between two chunks is resumed
 * where it stopped, so the scanner holds no chunk once it has returned, only
 * the element being built (at most `maxFields` fields, arrays of numbers up to
 * `maxArrayItems`, texts up to MAX_TEXT characters) and a stack of nesting at
 * most MAX_DEPTH deep. Anything nested deeper in an element is checked and
 * skipped; an element the caller does not keep is checked and skipped without
 * being built. Numbers are kept as their text, so 64-bit integers stay exact.
 *
 * The rdma tool's JSON is read this way instead of JSON.parse: a hostile or
 * runaway reading (a million entries, a hundred thousand keys) must cost no
 * more than what is kept of it, whatever its size.
 */

import {
  frame,
  isDigit,
  isHex,
  isWs,
  Kind,
  Lex,
  NumAt,
  PUNCTUATION,
  SIMPLE_ESCAPES,
  stepNumber,
  Tok,
  Want,
  wantText,
  type Frame,
  type JsonField,
} from './json-grammar.js';

export type { JsonField } from './json-grammar.js';

export class JsonSyntaxError extends Error {}

export interface JsonEntry {
  /** The object's first `maxFields` fields; undefined when the element is not an object. */
  readonly fields?: ReadonlyMap<string, JsonField>;
  /** Fields beyond `maxFields`, not kept. */
  readonly extraFields: number;
}

export interface ScanShape {
  readonly maxFields: number;
  readonly maxArrayItems: number;
  /** Only these fields are kept (the others are checked and skipped); absent: any. */
  readonly keys?: ReadonlySet<string>;
}

export const END = Symbol('end of array');

// Nesting deeper than this is malformed for the rdma tool's flat entries (and keeps the stack bounded).
const MAX_DEPTH = 32;
/**
 * A string or number longer than this is not built (a key: its field is not kept, and counts as
 * an extra one unless only listed keys are kept; a value: it is `other`): the rdma tool's names
 * and values are short, and a runaway one must not be held whole.
 */
export const MAX_TEXT = 4096;
const OTHER: JsonField = { kind: 'other' };
const SKIPPED: JsonEntry = { extraFields: 0 };

export interface StreamOptions {
  readonly shape: ScanShape;
  /** Asked once per element, before it is read: whether to build it. */
  readonly keep: () => boolean;
  /** Each element, in order, as soon as it ends. */
  readonly onEntry: (entry: JsonEntry) => void;
}

/** What the scanner holds between two chunks (debug: what the memory tests count). */
export interface Held {
  /** Characters of token text held now (a string or number split by the chunk boundary). */
  readonly chars: number;
  /** The most characters of token text held between two chunks so far. */
  readonly maxChars: number;
  /** Open containers now, and the most so far. */
  readonly depth: number;
  readonly maxDepth: number;
}

export class JsonArrayStream {
  private readonly stack: Frame[] = [frame(Kind.Top, false, 0)];
  private lex = Lex.Between;
  private pos = 0;
  // The token in progress (what is left of it between chunks).
  private build = false;
  private parts = '';
  private partsLong = false;
  private unicode = 0;
  private unicodeDigits = 0;
  private numAt = NumAt.Start;
  private lit = '';
  private litAt = 0;
  private maxChars = 0;
  private maxDepth = 1;

  constructor(private readonly opts: StreamOptions) {}

  /** Characters consumed so far. */
  get offset(): number {
    return this.pos;
  }

  get held(): Held {
    return { chars: this.parts.length, maxChars: this.maxChars, depth: this.stack.length, maxDepth: this.maxDepth };
  }

  /** Scans the next piece of text; throws JsonSyntaxError at the first error. */
  push(chunk: string): void {
    let i = 0;
    const n = chunk.length;
    while (i < n) {
      if (this.lex === Lex.Between) i = this.between(chunk, i);
      else if (this.lex === Lex.Str) i = this.inString(chunk, i);
      else if (this.lex === Lex.StrEscape) i = this.escape(chunk, i);
      else if (this.lex === Lex.StrUnicode) i = this.unicodeDigit(chunk, i);
      else if (this.lex === Lex.Num) i = this.inNumber(chunk, i);
      else i = this.inLiteral(chunk, i);
    }
    if (this.parts.length > this.maxChars) this.maxChars = this.parts.length;
  }

  /** The text ended: throws unless it was one whole array. */
  end(): void {
    if (this.lex === Lex.Str || this.lex === Lex.StrEscape || this.lex === Lex.StrUnicode)
      this.fail('unterminated string');
    if (this.lex === Lex.Num) this.endNumber();
    if (this.lex === Lex.Lit) this.fail('a value expected');
    if (this.stack.length !== 1 || this.stack[0]?.want !== Want.Done) this.fail('unexpected end of the text');
  }

  private between(s: string, start: number): number {
    let i = start;
    while (i < s.length && isWs(s.charCodeAt(i))) i++;
    this.pos += i - start;
    if (i === s.length) return i;
    const c = s.charCodeAt(i);
    if (c === 0x22) {
      this.startText(Lex.Str, true);
      this.pos++;
      return i + 1;
    }
    if (c === 0x2d || isDigit(c)) {
      this.startText(Lex.Num, false);
      this.numAt = NumAt.Start;
      return i; // the number's own states read its first character
    }
    if (c === 0x74 || c === 0x66 || c === 0x6e) {
      this.lex = Lex.Lit;
      this.lit = c === 0x74 ? 'true' : c === 0x66 ? 'false' : 'null';
      this.litAt = 0;
      return i;
    }
    const t = PUNCTUATION[c];
    if (t === undefined) this.fail('a value expected');
    this.token(t, undefined);
    this.pos++;
    return i + 1;
  }

  private startText(lex: Lex, isString: boolean): void {
    this.lex = lex;
    this.build = wantText(this.top(), isString);
    this.parts = '';
    this.partsLong = false;
  }

  private append(text: string): void {
    if (!this.build || this.partsLong || text.length === 0) return;
    if (this.parts.length + text.length > MAX_TEXT) {
      this.partsLong = true;
      this.parts = '';
    } else this.parts += text;
  }

  private inString(s: string, start: number): number {
    let i = start;
    for (; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c === 0x22 || c === 0x5c) break;
      if (c < 0x20) {
        this.pos += i - start;
        this.fail('control character in a string');
      }
    }
    if (this.build && i > start) this.append(s.slice(start, i));
    this.pos += i - start;
    if (i === s.length) return i;
    this.pos++;
    if (s.charCodeAt(i) === 0x5c) {
      this.lex = Lex.StrEscape;
      return i + 1;
    }
    this.lex = Lex.Between;
    this.token(Tok.Str, this.text());
    return i + 1;
  }

  private escape(s: string, i: number): number {
    const c = s.charCodeAt(i);
    if (c === 0x75) {
      this.lex = Lex.StrUnicode;
      this.unicode = 0;
      this.unicodeDigits = 0;
    } else {
      const simple = SIMPLE_ESCAPES[c];
      if (simple === undefined) this.fail('bad escape');
      this.append(simple);
      this.lex = Lex.Str;
    }
    this.pos++;
    return i + 1;
  }

  private unicodeDigit(s: string, i: number): number {
    if (!isHex(s.charCodeAt(i))) this.fail('bad \\u escape');
    this.pos++;
    this.unicode = this.unicode * 16 + parseInt(s.charAt(i), 16);
    if (++this.unicodeDigits === 4) {
      this.append(String.fromCharCode(this.unicode));
      this.lex = Lex.Str;
    }
    return i + 1;
  }

  private inNumber(s: string, start: number): number {
    let i = start;
    for (; i < s.length; i++) {
      const next = stepNumber(this.numAt, s.charCodeAt(i));
      if (next === undefined) break;
      this.numAt = next;
    }
    if (this.build && i > start) this.append(s.slice(start, i));
    this.pos += i - start;
    if (i < s.length) this.endNumber();
    return i;
  }

  private endNumber(): void {
    const at = this.numAt;
    if (at !== NumAt.Zero && at !== NumAt.Int && at !== NumAt.Frac && at !== NumAt.ExpInt) this.fail('bad number');
    this.lex = Lex.Between;
    this.token(Tok.Num, this.text());
  }

  private inLiteral(s: string, start: number): number {
    let i = start;
    while (i < s.length && this.litAt < this.lit.length) {
      if (s.charCodeAt(i) !== this.lit.charCodeAt(this.litAt)) this.fail('a value expected');
      i++;
      this.litAt++;
      this.pos++;
    }
    if (this.litAt === this.lit.length) {
      this.lex = Lex.Between;
      this.token(Tok.Lit, undefined);
    }
    return i;
  }

  private text(): string | undefined {
    const t = this.build && !this.partsLong ? this.parts : undefined;
    this.parts = '';
    return t;
  }

  private top(): Frame {
    return this.stack[this.stack.length - 1] as Frame;
  }

  /** A token at the innermost open container; `text` only when asked for (and not too long). */
  private token(t: Tok, text: string | undefined): void {
    const f = this.top();
    const close = f.isObject ? Tok.CloseObj : Tok.Close;
    switch (f.want) {
      case Want.Start:
        if (t !== Tok.Open) this.fail("'[' expected");
        f.want = Want.First;
        return;
      case Want.Done:
        return this.fail('text after the array');
      case Want.Next:
        if (t === close) return this.close(f);
        if (t !== Tok.Comma) this.fail("',' expected");
        f.want = Want.Item;
        return;
      case Want.Colon:
        if (t !== Tok.Colon) this.fail("':' expected");
        f.want = Want.Value;
        return;
      case Want.First:
        if (t === close) return this.close(f);
        break;
      default:
    }
    if (f.isObject && f.want !== Want.Value) this.key(f, t, text);
    else this.value(f, t, text);
  }

  private key(f: Frame, t: Tok, key: string | undefined): void {
    if (t !== Tok.Str) this.fail('a string expected');
    f.want = Want.Colon;
    if (f.kind !== Kind.Object) return;
    const { shape } = this.opts;
    const fields = f.fields as Map<string, JsonField>;
    f.key = key;
    f.keepField = false;
    if (key === undefined) f.extraFields += shape.keys === undefined ? 1 : 0;
    else if (shape.keys !== undefined && !shape.keys.has(key)) return;
    else if (fields.size < shape.maxFields || fields.has(key)) f.keepField = true;
    else f.extraFields++;
  }

  private value(f: Frame, t: Tok, text: string | undefined): void {
    f.want = Want.Next;
    if (f.kind === Kind.Top) {
      f.kept = this.opts.keep();
      f.keptObject = f.kept && t === Tok.OpenObj;
      if (f.keptObject) this.open(frame(Kind.Object, true, 1));
      else if (this.skip(t, 1)) this.child(f, OTHER);
    } else if (f.kind === Kind.Skip) this.skip(t, f.depth + 1);
    else if (f.kind === Kind.Object) this.fieldValue(f, t, text);
    else {
      f.length++;
      if (t === Tok.Num && text !== undefined) {
        if ((f.list as number[]).length < this.opts.shape.maxArrayItems) (f.list as number[]).push(Number(text));
      } else {
        f.onlyNumbers = false;
        this.skip(t, 3);
      }
    }
  }

  private fieldValue(f: Frame, t: Tok, text: string | undefined): void {
    if (!f.keepField || t === Tok.OpenObj) {
      if (this.skip(t, 2)) this.child(f, OTHER);
    } else if (t === Tok.Open) this.open(frame(Kind.Numbers, false, 2));
    else if (t === Tok.Str && text !== undefined) this.child(f, { kind: 'string', text });
    else if (t === Tok.Num && text !== undefined) this.child(f, { kind: 'number', raw: text });
    else if (this.skip(t, 2)) this.child(f, OTHER);
  }

  /** Checks a value not built: true when it is a scalar (done), false when a container opened. */
  private skip(t: Tok, depth: number): boolean {
    if (depth > MAX_DEPTH) this.fail('nested too deep');
    if (t === Tok.Str || t === Tok.Num || t === Tok.Lit) return true;
    if (t !== Tok.Open && t !== Tok.OpenObj) this.fail('a value expected');
    this.open(frame(Kind.Skip, t === Tok.OpenObj, depth));
    return false;
  }

  private open(f: Frame): void {
    this.stack.push(f);
    if (this.stack.length > this.maxDepth) this.maxDepth = this.stack.length;
  }

  private close(f: Frame): void {
    if (f.kind === Kind.Top) {
      f.want = Want.Done;
      return;
    }
    this.stack.pop();
    const value: JsonField | JsonEntry =
      f.kind === Kind.Object
        ? { fields: f.fields as Map<string, JsonField>, extraFields: f.extraFields }
        : f.kind === Kind.Numbers && f.onlyNumbers
          ? { kind: 'numbers', list: f.list as number[], length: f.length }
          : OTHER;
    this.child(this.top(), value);
  }

  /** A value of `f` ended (`value` what was built of it). */
  private child(f: Frame, value: JsonField | JsonEntry): void {
    if (f.kind === Kind.Top) {
      this.opts.onEntry(f.keptObject ? (value as JsonEntry) : f.kept ? { extraFields: 0 } : SKIPPED);
    } else if (f.kind === Kind.Object && f.keepField && f.key !== undefined) {
      (f.fields as Map<string, JsonField>).set(f.key, value as JsonField);
    }
  }

  private fail(what: string): never {
    throw new JsonSyntaxError(`${what} at offset ${this.pos}`);
  }
}

/**
 * The scanner over one whole text, element by element (pulled): the text is fed in slices until
 * the next element ends.
 */
export class JsonArrayScanner {
  private readonly stream: JsonArrayStream;
  private readonly queue: JsonEntry[] = [];
  private fed = 0;
  private ended = false;
  private keep: () => boolean = () => false;

  constructor(
    private readonly text: string,
    shape: ScanShape,
  ) {
    this.stream = new JsonArrayStream({ shape, keep: () => this.keep(), onEntry: (e) => this.queue.push(e) });
  }

  get offset(): number {
    return this.stream.offset;
  }

  /** The next element (built only when `keep()`, asked once there is one), or END after the array. */
  next(keep: () => boolean): JsonEntry | typeof END {
    this.keep = keep;
    while (this.queue.length === 0 && !this.ended) {
      if (this.fed < this.text.length) {
        const to = Math.min(this.text.length, this.fed + SLICE);
        this.stream.push(this.text.slice(this.fed, to));
        this.fed = to;
      } else {
        this.stream.end();
        this.ended = true;
      }
    }
    return this.queue.shift() ?? END;
  }
}

const SLICE = 4096;
