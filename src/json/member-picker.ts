/**
 * The member picker behind the splitter's `keepMembers`: copies the wanted top-level members of a
 * JSON object out of its bytes without decoding the rest. At 100k jobs it saves a third of a
 * collection (bench/member-picker-ab.ts: every job parsed whole instead).
 */
import { Byte } from './bytes.js';
import { skipWhitespace, valueEnd } from './extent.js';

/** Values longer than this are copied with Buffer.copy; shorter ones byte by byte (cheaper). */
const NATIVE_COPY_BYTES = 64;
const TABLE_SIZE = 256;

/**
 * Where a key's candidates are: its length and its first and last bytes. The key's bytes are
 * then compared only against names that agree on all three, and the scan of a key does no
 * arithmetic per byte: it is a third of the bytes of a typical job object.
 */
const slotOf = (length: number, first: number, last: number): number =>
  (length * 7 + first * 3 + last) & (TABLE_SIZE - 1);

/**
 * Copies the members of a JSON object whose names are in a fixed set into a new, smaller JSON
 * object text. Only the object's top level is interpreted: each member's value is skipped by
 * string state and bracket depth (extent.ts), and copied byte for byte when kept.
 */
export class MemberPicker implements Picker {
  /** Names by slotOf(), each slot a short list. */
  private readonly table: (readonly Buffer[])[];
  private readonly wantsEmpty: boolean;
  private out: Buffer = Buffer.allocUnsafe(16 * 1024);
  private outLength = 0;

  constructor(names: Iterable<string>) {
    const unique = new Set(names);
    const lists: Buffer[][] = Array.from({ length: TABLE_SIZE }, () => []);
    for (const name of unique) {
      const b = Buffer.from(name, 'utf8');
      if (b.length > 0) lists[slotOf(b.length, b[0] as number, b[b.length - 1] as number)]?.push(b);
    }
    this.table = lists;
    this.wantsEmpty = unique.has('');
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
    if (src[start] !== Byte.OpenBrace) return -1;
    let out = this.out;
    out[0] = Byte.OpenBrace;
    let o = 1;
    let i = skipWhitespace(src, start + 1, limit);
    if (src[i] === Byte.CloseBrace) i++;
    else {
      for (;;) {
        if (src[i] !== Byte.Quote) return -1;
        const keyStart = i++;
        let escaped = false;
        for (; i < limit; i++) {
          const c = src[i] as number;
          if (c === Byte.Quote) break;
          if (c === Byte.Backslash) {
            escaped = true;
            i++;
          }
        }
        if (i >= limit) return -1;
        const keyEnd = i++;
        i = skipWhitespace(src, i, limit);
        if (src[i] !== Byte.Colon) return -1;
        i = skipWhitespace(src, i + 1, limit);
        const end = valueEnd(src, i, limit);
        if (end < 0) return -1;
        if (escaped || this.has(src, keyStart + 1, keyEnd)) {
          const size = end - keyStart;
          if (o + size + 2 > out.length) {
            const bigger = Buffer.allocUnsafe(Math.max(out.length * 2, o + size + 2));
            out.copy(bigger, 0, 0, o);
            this.out = out = bigger;
          }
          if (o > 1) out[o++] = Byte.Comma;
          if (size > NATIVE_COPY_BYTES) o += src.copy(out, o, keyStart, end);
          else for (let k = keyStart; k < end; k++) out[o++] = src[k] as number;
        }
        i = skipWhitespace(src, end, limit);
        const c = src[i];
        if (c === Byte.Comma) {
          i = skipWhitespace(src, i + 1, limit);
          continue;
        }
        if (c !== Byte.CloseBrace) return -1;
        i++;
        break;
      }
    }
    out[o++] = Byte.CloseBrace;
    this.outLength = o;
    return i;
  }

  private has(src: Buffer, from: number, to: number): boolean {
    const length = to - from;
    if (length === 0) return this.wantsEmpty;
    const names = this.table[slotOf(length, src[from] as number, src[to - 1] as number)] as readonly Buffer[];
    for (let n = 0; n < names.length; n++) {
      const name = names[n] as Buffer;
      if (name.length !== length) continue;
      let k = 0;
      while (k < length && name[k] === src[from + k]) k++;
      if (k === length) return true;
    }
    return false;
  }
}

/** What the splitter needs of a picker. */
export interface Picker {
  pick(src: Buffer): Buffer | undefined;
  picked(): Buffer;
  scan(src: Buffer, start: number, limit: number): number;
}

/** Whether the splitter picks members (`none`: elements parsed whole, the benchmark's other arm). */
export type PickerKind = 'picker' | 'none';
let pickerKind: PickerKind = 'picker';

export function useMemberPicker(kind: PickerKind): void {
  pickerKind = kind;
}

/** The picker for `names`; undefined hands elements on whole. */
export function createMemberPicker(names: Iterable<string>): Picker | undefined {
  return pickerKind === 'none' ? undefined : new MemberPicker(names);
}
