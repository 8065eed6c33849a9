/**
 * The elements of one named array of a JSON object, split off as its bytes stream in (the cluster
 * agent's big slurmrestd responses).
 *
 * A `/jobs/` body for 100k jobs is ~540 MB, beyond V8's maximum string length, so it can neither
 * be read as one string nor given to JSON.parse. The stream (stream.ts) follows the body's top
 * level, finds the elements of one named top-level array (`jobs`, `nodes`) and takes each raw:
 * its bytes go to a callback, which parses that element alone, so one bad element costs one
 * element. The other top-level members (`meta`, `errors`, `warnings`, `last_update`, ...) are
 * small: they are taken raw too and parsed normally, so the caller can read `meta` and `errors`
 * at the end. Structural errors at the top level (not an object, a missing colon, a truncated
 * body) throw JsonStreamError.
 */
import { Byte } from './bytes.js';
import { createMemberPicker, type Picker } from './member-picker.js';
import { JsonStream, JsonStreamError, Read, type JsonReader } from './stream.js';

export { JsonStreamError } from './stream.js';

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

/** The top level of the body, as a JsonReader: depth 1 is the root object, 2 the named array. */
class EnvelopeReader implements JsonReader {
  readonly members: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  arrayFound = false;
  elements = 0;
  private memberBytes = 0;
  private memberKey = '';
  private depth = 0;
  private readonly maxElementBytes: number;
  private readonly maxMemberBytes: number;
  private readonly picker: Picker | undefined;

  constructor(private readonly opts: JsonArraySplitterOptions) {
    this.maxElementBytes = opts.maxElementBytes ?? 256 * 1024 * 1024;
    this.maxMemberBytes = opts.maxMemberBytes ?? 16 * 1024 * 1024;
    this.picker = opts.keepMembers === undefined ? undefined : createMemberPicker(opts.keepMembers);
  }

  expects(): string {
    return 'a JSON object ("{")';
  }

  where(): string {
    if (this.depth === 2) return `in "${this.opts.arrayKey}" after ${this.elements} elements`;
    return this.memberKey === '' ? 'in the top-level object' : `near member "${this.memberKey}"`;
  }

  value(c: number, depth: number): Read {
    if (depth === 0) {
      if (c !== Byte.OpenBrace) return Read.Refuse;
      this.depth = 1;
      return Read.Follow;
    }
    if (depth === 2) return Read.Raw;
    if (this.memberKey !== this.opts.arrayKey) return Read.Raw;
    this.restartArray(c === Byte.OpenBracket);
    if (c !== Byte.OpenBracket) return Read.Raw;
    this.depth = 2;
    return Read.Follow;
  }

  /** A (repeated) member named arrayKey starts: whatever it said before no longer counts. */
  private restartArray(isArray: boolean): void {
    if (this.arrayFound || this.opts.arrayKey in this.members) {
      this.opts.onArrayRestart?.();
      this.elements = 0;
      delete this.members[this.opts.arrayKey];
    }
    this.arrayFound = isArray;
  }

  key(text: string | undefined): void {
    // Keys longer than the stream's maxText (maxMemberBytes) would exceed the members' limit.
    if (text === undefined) throw new JsonStreamError(`top-level members exceed ${this.maxMemberBytes} bytes`);
    this.memberKey = text;
  }

  scalar(): void {}

  skipped(): void {}

  close(): void {
    this.depth--;
  }

  rawGrown(bytes: number): void {
    this.checkSize(bytes);
  }

  rawQuick(buf: Buffer, start: number, limit: number): number {
    // One pass for the usual element, an object that ends in this chunk: find its end and pick
    // its members at once. Any other element takes the general path (and is picked when whole).
    if (this.depth !== 2 || this.picker === undefined || buf[start] !== Byte.OpenBrace) return -1;
    const end = this.picker.scan(buf, start, limit);
    if (end < 0) return -1;
    this.checkSize(end - start);
    this.opts.onElement(this.picker.picked(), this.elements++);
    return end;
  }

  raw(bytes: Buffer): void {
    this.checkSize(bytes.length);
    if (this.depth === 2) {
      const picked = this.picker === undefined ? undefined : this.picker.pick(bytes);
      this.opts.onElement(picked ?? bytes, this.elements++);
      return;
    }
    this.memberBytes += bytes.length;
    this.members[this.memberKey] = this.parse(bytes);
  }

  private checkSize(size: number): void {
    if (this.depth === 2 && size > this.maxElementBytes) {
      throw new JsonStreamError(
        `element ${this.elements} of "${this.opts.arrayKey}" exceeds ${this.maxElementBytes} bytes`,
      );
    }
    if (this.depth !== 2 && this.memberBytes + size > this.maxMemberBytes) {
      throw new JsonStreamError(`top-level members exceed ${this.maxMemberBytes} bytes`);
    }
  }

  private parse(bytes: Buffer): unknown {
    try {
      return JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      throw new JsonStreamError(`bad JSON in top-level member "${this.memberKey}": ${(err as Error).message}`);
    }
  }
}

export class JsonArraySplitter {
  private readonly reader: EnvelopeReader;
  private readonly stream: JsonStream;

  constructor(opts: JsonArraySplitterOptions) {
    this.reader = new EnvelopeReader(opts);
    this.stream = new JsonStream(this.reader, { maxText: opts.maxMemberBytes ?? 16 * 1024 * 1024 });
  }

  write(chunk: Uint8Array): void {
    this.stream.push(chunk);
  }

  /** Declares the body complete; throws when it ended before the root object closed. */
  end(): SplitResult {
    this.stream.end();
    const { members, arrayFound, elements } = this.reader;
    return { members, arrayFound, elements, bytes: this.stream.offset };
  }
}
