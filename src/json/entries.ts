/**
 * A JSON array of flat objects read one element at a time (the node agent's `rdma -j` output),
 * building only what is kept of each: at most `maxFields` fields of an object (only `keys` when
 * given), a field's string or number as its text (so 64-bit integers stay exact), an array of
 * numbers up to `maxArrayItems`; anything else is checked and skipped. An element the caller does
 * not keep is checked and skipped without being built. A hostile or runaway text (a million
 * entries, a hundred thousand keys) costs no more than what is kept of it, whatever its size.
 */
import { Byte, isDigit } from './bytes.js';
import { JsonStream, Read, Scalar, type JsonReader, type StreamLimits } from './stream.js';

/** A kept field of an element: a string, a number as its text, an array of numbers, or anything else. */
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

export interface EntryShape {
  readonly maxFields: number;
  readonly maxArrayItems: number;
  /** Only these fields are kept (the others are checked and skipped); absent: any. */
  readonly keys?: ReadonlySet<string>;
}

export interface EntryOptions {
  readonly shape: EntryShape;
  /** Asked once per element, before it is read: whether to build it. */
  readonly keep: () => boolean;
  /** Each element, in order, as soon as it ends. */
  readonly onEntry: (entry: JsonEntry) => void;
}

/** Text longer than this is not built: a key's field is not kept, a value is `other`. */
export const MAX_TEXT = 4096;
const OTHER: JsonField = { kind: 'other' };
/** Every element not built is this one entry: a million skipped elements allocate nothing. */
const SKIPPED: JsonEntry = { extraFields: 0 };

/** The element in progress: an object's fields, or a field's array of numbers. */
interface Building {
  fields: Map<string, JsonField>;
  extraFields: number;
  key: string | undefined;
  keepField: boolean;
  list: number[] | undefined;
  length: number;
  onlyNumbers: boolean;
}

/** The entries of one array, as a JsonReader: depth 1 are elements, 2 their fields, 3 list items. */
class EntryReader implements JsonReader {
  private readonly building: Building = {
    fields: new Map(),
    extraFields: 0,
    key: undefined,
    keepField: false,
    list: undefined,
    length: 0,
    onlyNumbers: true,
  };
  private depth = 0;

  constructor(private readonly opts: EntryOptions) {}

  expects(): string {
    return 'a JSON array ("[")';
  }

  value(c: number, depth: number): Read {
    const b = this.building;
    if (depth === 0) return c === Byte.OpenBracket ? this.open(Read.Follow) : Read.Refuse;
    if (depth === 1) {
      if (!this.opts.keep() || c !== Byte.OpenBrace) return Read.Skip;
      b.fields = new Map();
      b.extraFields = 0;
      return this.open(Read.Follow);
    }
    if (depth === 2) {
      if (!b.keepField || c === Byte.OpenBrace) return Read.Skip;
      if (c === Byte.OpenBracket) {
        b.list = [];
        b.length = 0;
        b.onlyNumbers = true;
        return this.open(Read.Follow);
      }
      return c === Byte.Quote || c === Byte.Minus || isDigit(c) ? Read.Follow : Read.Skip;
    }
    b.length++;
    if (c === Byte.Minus || isDigit(c)) return Read.Follow;
    b.onlyNumbers = false;
    return Read.Skip;
  }

  private open(how: Read): Read {
    this.depth++;
    return how;
  }

  key(key: string | undefined): void {
    const b = this.building;
    const { shape } = this.opts;
    b.key = key;
    b.keepField = false;
    if (key === undefined) b.extraFields += shape.keys === undefined ? 1 : 0;
    else if (shape.keys !== undefined && !shape.keys.has(key)) return;
    else if (b.fields.size < shape.maxFields || b.fields.has(key)) b.keepField = true;
    else b.extraFields++;
  }

  scalar(kind: Scalar, text: string | undefined): void {
    const b = this.building;
    if (this.depth === 2) {
      if (text === undefined) this.field(OTHER);
      else this.field(kind === Scalar.String ? { kind: 'string', text } : { kind: 'number', raw: text });
    } else if (text === undefined) b.onlyNumbers = false;
    else if ((b.list as number[]).length < this.opts.shape.maxArrayItems) (b.list as number[]).push(Number(text));
  }

  skipped(): void {
    if (this.depth === 1) this.opts.onEntry(SKIPPED);
    else if (this.depth === 2) this.field(OTHER);
  }

  close(): void {
    const b = this.building;
    this.depth--;
    if (this.depth === 1) this.opts.onEntry({ fields: b.fields, extraFields: b.extraFields });
    else if (this.depth === 2) {
      this.field(b.onlyNumbers ? { kind: 'numbers', list: b.list as number[], length: b.length } : OTHER);
      b.list = undefined;
    }
  }

  raw(): void {}

  private field(value: JsonField): void {
    const b = this.building;
    if (b.keepField && b.key !== undefined) b.fields.set(b.key, value);
  }
}

/** A stream over an array of entries; push() its chunks, then end(). */
export function entryStream(opts: EntryOptions, limits: StreamLimits = {}): JsonStream {
  return new JsonStream(new EntryReader(opts), { maxText: MAX_TEXT, ...limits });
}
