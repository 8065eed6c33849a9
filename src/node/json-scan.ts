/**
 * A JSON array scanned one element at a time, in time linear in its length
 * and with bounded memory per element: the objects of the array keep at most
 * `maxFields` fields each (scalars, and arrays of numbers up to
 * `maxArrayItems`); anything nested deeper is checked and skipped. Numbers are
 * kept as their text, so 64-bit integers stay exact. An element the caller
 * does not keep is checked and skipped without being built.
 *
 * The rdma tool's JSON is read this way instead of JSON.parse: a hostile or
 * runaway reading (a million entries, a hundred thousand keys) must not cost
 * more than its own size.
 */

export class JsonSyntaxError extends Error {}

export type JsonField =
  | { readonly kind: 'string'; readonly text: string }
  | { readonly kind: 'number'; readonly raw: string }
  | { readonly kind: 'numbers'; readonly list: readonly number[]; readonly length: number }
  | { readonly kind: 'other' };

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
const OTHER: JsonField = { kind: 'other' };
const SKIPPED: JsonEntry = { extraFields: 0 };

const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isHex = (c: number): boolean => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

export class JsonArrayScanner {
  private pos = 0;
  private count = 0;
  private done = false;

  constructor(
    private readonly text: string,
    private readonly shape: ScanShape,
  ) {
    this.ws();
    this.expect(0x5b); // [
  }

  /** Characters consumed so far. */
  get offset(): number {
    return this.pos;
  }

  /** The next element (built only when `keep()`, asked once there is one), or END after the array. */
  next(keep: () => boolean): JsonEntry | typeof END {
    if (this.done) return END;
    this.ws();
    if (this.peek() === 0x5d) return this.finish();
    if (this.count > 0) {
      this.expect(0x2c); // ,
      this.ws();
    }
    this.count++;
    const kept = keep();
    if (kept && this.peek() === 0x7b) return this.object();
    this.skipValue(1);
    return kept ? { extraFields: 0 } : SKIPPED;
  }

  private finish(): typeof END {
    this.pos++;
    this.ws();
    if (this.pos !== this.text.length) this.fail('text after the array');
    this.done = true;
    return END;
  }

  private object(): JsonEntry {
    const fields = new Map<string, JsonField>();
    let extraFields = 0;
    this.pos++;
    this.ws();
    if (this.peek() === 0x7d) {
      this.pos++;
      return { fields, extraFields };
    }
    for (;;) {
      this.ws();
      const key = this.string(true);
      this.ws();
      this.expect(0x3a); // :
      this.ws();
      if (this.shape.keys !== undefined && !this.shape.keys.has(key)) this.skipValue(2);
      else if (fields.size < this.shape.maxFields || fields.has(key)) fields.set(key, this.field());
      else {
        extraFields++;
        this.skipValue(2);
      }
      this.ws();
      if (this.peek() === 0x7d) break;
      this.expect(0x2c);
    }
    this.pos++;
    return { fields, extraFields };
  }

  private field(): JsonField {
    const c = this.peek();
    if (c === 0x22) return { kind: 'string', text: this.string(true) };
    if (c === 0x2d || isDigit(c)) return { kind: 'number', raw: this.number(true) };
    if (c === 0x5b) return this.numbers();
    this.skipValue(2);
    return OTHER;
  }

  /** An array: its numbers (the first `maxArrayItems`) when it holds only numbers. */
  private numbers(): JsonField {
    const list: number[] = [];
    let length = 0;
    let onlyNumbers = true;
    this.pos++;
    this.ws();
    if (this.peek() === 0x5d) {
      this.pos++;
      return { kind: 'numbers', list, length };
    }
    for (;;) {
      this.ws();
      const c = this.peek();
      if (c === 0x2d || isDigit(c)) {
        const n = Number(this.number(true));
        if (list.length < this.shape.maxArrayItems) list.push(n);
      } else {
        onlyNumbers = false;
        this.skipValue(3);
      }
      length++;
      this.ws();
      if (this.peek() === 0x5d) break;
      this.expect(0x2c);
    }
    this.pos++;
    return onlyNumbers ? { kind: 'numbers', list, length } : OTHER;
  }

  private skipValue(depth: number): void {
    if (depth > MAX_DEPTH) this.fail('nested too deep');
    const c = this.peek();
    if (c === 0x22) this.string(false);
    else if (c === 0x2d || isDigit(c)) this.number(false);
    else if (c === 0x7b || c === 0x5b) this.skipContainer(c === 0x7b ? 0x7d : 0x5d, depth);
    else if (this.text.startsWith('true', this.pos)) this.pos += 4;
    else if (this.text.startsWith('false', this.pos)) this.pos += 5;
    else if (this.text.startsWith('null', this.pos)) this.pos += 4;
    else this.fail('a value expected');
  }

  private skipContainer(close: number, depth: number): void {
    const isObject = close === 0x7d;
    this.pos++;
    this.ws();
    if (this.peek() === close) {
      this.pos++;
      return;
    }
    for (;;) {
      this.ws();
      if (isObject) {
        this.string(false);
        this.ws();
        this.expect(0x3a);
        this.ws();
      }
      this.skipValue(depth + 1);
      this.ws();
      if (this.peek() === close) break;
      this.expect(0x2c);
    }
    this.pos++;
  }

  /** A string at the cursor: its value when `build`; escapes checked either way. */
  private string(build: boolean): string {
    if (this.peek() !== 0x22) this.fail('a string expected');
    const { text } = this;
    const start = this.pos + 1;
    let escaped = false;
    let i = start;
    for (;;) {
      if (i >= text.length) this.fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) break;
      if (c < 0x20) this.fail('control character in a string');
      if (c === 0x5c) {
        escaped = true;
        i = this.escape(i + 1);
      } else i++;
    }
    this.pos = i + 1;
    if (!build) return '';
    return escaped ? (JSON.parse(text.slice(start - 1, i + 1)) as string) : text.slice(start, i);
  }

  /** Checks the escape after a backslash at `i - 1`; the index after it. */
  private escape(i: number): number {
    const c = this.text.charCodeAt(i);
    if (c === 0x75) {
      for (let k = 1; k <= 4; k++) if (!isHex(this.text.charCodeAt(i + k))) this.fail('bad \\u escape');
      return i + 5;
    }
    // " \ / b f n r t
    if ([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74].includes(c)) return i + 1;
    return this.fail('bad escape');
  }

  /** A number at the cursor: its text when `build`. */
  private number(build: boolean): string {
    const { text } = this;
    const start = this.pos;
    let i = start;
    if (text.charCodeAt(i) === 0x2d) i++;
    if (text.charCodeAt(i) === 0x30) i++;
    else if (isDigit(text.charCodeAt(i))) while (isDigit(text.charCodeAt(i))) i++;
    else this.fail('bad number');
    if (text.charCodeAt(i) === 0x2e) {
      i++;
      if (!isDigit(text.charCodeAt(i))) this.fail('bad number');
      while (isDigit(text.charCodeAt(i))) i++;
    }
    if (text.charCodeAt(i) === 0x65 || text.charCodeAt(i) === 0x45) {
      i++;
      if (text.charCodeAt(i) === 0x2b || text.charCodeAt(i) === 0x2d) i++;
      if (!isDigit(text.charCodeAt(i))) this.fail('bad number');
      while (isDigit(text.charCodeAt(i))) i++;
    }
    this.pos = i;
    return build ? text.slice(start, i) : '';
  }

  private ws(): void {
    while (this.pos < this.text.length && isWs(this.text.charCodeAt(this.pos))) this.pos++;
  }

  private peek(): number {
    return this.text.charCodeAt(this.pos);
  }

  private expect(c: number): void {
    if (this.peek() !== c) this.fail(`'${String.fromCharCode(c)}' expected`);
    this.pos++;
  }

  private fail(what: string): never {
    throw new JsonSyntaxError(`${what} at offset ${this.pos}`);
  }
}
