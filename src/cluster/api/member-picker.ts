/**
 * The member picker behind the splitter's `keepMembers`: copies the wanted top-level members of a
 * JSON object out of its bytes without decoding the rest.
 */
import { isWhitespace } from './json-bytes.js';
import { JsMemberPicker } from './member-picker-js.js';
import { MEMBER_PICKER_WASM } from './member-picker-wasm.js';

/** The part of Node's WebAssembly API used here (the TypeScript libraries in use do not declare it). */
interface Wasm {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { readonly exports: unknown };
}

interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

/** The scanner's exports (member-picker.wat says what each does and how memory is laid out). */
interface ScannerExports {
  readonly memory: WasmMemory;
  readonly namesBase: { readonly value: number };
  readonly inputBase: { readonly value: number };
  setOutput(at: number): void;
  outLength(): number;
  addName(at: number, length: number): void;
  scan(start: number, limit: number): number;
}

const PAGE_BYTES = 65536;
const MAX_NAMES = 512;
// Node run with --jitless has no WebAssembly: the splitter then uses the JavaScript picker.
const wasm = (globalThis as unknown as { WebAssembly?: Wasm }).WebAssembly;
let scannerModule: object | undefined;

/** Compiled on first use: the node agent and the other commands never pay for it. */
function compiled(w: Wasm): object {
  scannerModule ??= new w.Module(Buffer.from(MEMBER_PICKER_WASM, 'base64'));
  return scannerModule;
}

/**
 * Copies the members of a JSON object whose names are in a fixed set into a new, smaller JSON
 * object text. Only the object's top level is interpreted: each member's value is skipped by
 * string state and bracket depth, like the splitter does, and copied byte for byte when kept.
 * The scan runs in WebAssembly, over a copy of the bytes in the scanner's memory: it reads every
 * byte of a /jobs response, at twice the speed of the same loop in JavaScript.
 */
export class MemberPicker {
  /** Whether this Node can run the scanner (not with --jitless). */
  static readonly available: boolean = wasm !== undefined;
  private readonly scanner: ScannerExports;
  private readonly inputBase: number;
  /** The buffer whose bytes are in the scanner's memory. */
  private loaded: Buffer | undefined;
  private outBase = 0;

  constructor(names: Iterable<string>) {
    if (wasm === undefined) throw new Error('this Node has no WebAssembly');
    this.scanner = new wasm.Instance(compiled(wasm)).exports as ScannerExports;
    this.inputBase = this.scanner.inputBase.value;
    let at = this.scanner.namesBase.value;
    const unique = new Set(names);
    // The name table has 1024 slots; at most half full, every probe ends at an empty one.
    if (unique.size > MAX_NAMES) throw new RangeError(`more than ${MAX_NAMES} member names`);
    for (const name of unique) {
      const bytes = Buffer.from(name, 'utf8');
      if (at + bytes.length > this.inputBase) throw new RangeError("member names exceed the scanner's name space");
      new Uint8Array(this.scanner.memory.buffer).set(bytes, at);
      this.scanner.addName(at, bytes.length);
      at += bytes.length;
    }
  }

  /**
   * Forgets what is in the scanner's memory: the caller may have written new bytes into the
   * buffer it scanned last (the splitter calls this for each chunk it is given).
   */
  forget(): void {
    this.loaded = undefined;
  }

  /** Puts `src` in the scanner's memory for the scans that follow. */
  private load(src: Buffer): void {
    // The output (never longer than its object) goes after the input.
    const need = this.inputBase + 2 * src.length + 16;
    const memory = this.scanner.memory;
    if (need > memory.buffer.byteLength) memory.grow(Math.ceil((need - memory.buffer.byteLength) / PAGE_BYTES));
    new Uint8Array(memory.buffer, this.inputBase, src.length).set(src);
    this.outBase = this.inputBase + src.length;
    this.scanner.setOutput(this.outBase);
    this.loaded = src;
  }

  /**
   * The kept members of the object in `src`, as a view into memory reused by the next call; or
   * undefined when `src` is not an object that scans cleanly (hand it on whole then).
   */
  pick(src: Buffer): Buffer | undefined {
    this.load(src);
    const i = skipWhitespace(src, 0, src.length);
    const end = this.scan(src, i, src.length);
    return end >= 0 && skipWhitespace(src, end, src.length) === src.length ? this.picked() : undefined;
  }

  /** What the last successful scan() kept (a view, valid until the next scan or load). */
  picked(): Buffer {
    return Buffer.from(this.scanner.memory.buffer, this.outBase, this.scanner.outLength());
  }

  /**
   * Scans the object starting at `start` (its "{"), keeping the wanted members for picked().
   * Returns the index just past its closing "}", or -1 when the object does not end before
   * `limit` or is not one this scanner reads (then nothing is kept). Where it succeeds it ends
   * exactly where the splitter's string-and-depth scan would: scalars may not contain quotes or
   * brackets, everything else is scanned the same way. Keys are compared by their raw bytes, so
   * a key written with escapes is always kept.
   */
  scan(src: Buffer, start: number, limit: number): number {
    if (src !== this.loaded) this.load(src);
    const end = this.scanner.scan(this.inputBase + start, this.inputBase + limit);
    return end < 0 ? -1 : end - this.inputBase;
  }
}

function skipWhitespace(src: Buffer, i: number, end: number): number {
  while (i < end && isWhitespace(src[i] as number)) i++;
  return i;
}

/** What the splitter needs of a picker. */
export interface Picker {
  forget(): void;
  pick(src: Buffer): Buffer | undefined;
  picked(): Buffer;
  scan(src: Buffer, start: number, limit: number): number;
}

/**
 * Which picker the splitter builds: the WebAssembly one where this Node has WebAssembly, else the
 * JavaScript one (the same members kept, at about 1.2x the CPU time). The A/B benchmark
 * (bench/member-picker-ab.ts) switches between them, and to `none` (elements parsed whole).
 */
export type PickerKind = 'wasm' | 'js' | 'none';
let pickerKind: PickerKind = 'wasm';

export function useMemberPicker(kind: PickerKind): void {
  pickerKind = kind;
}

/** The picker for `names`; undefined hands elements on whole (the benchmark's `none` arm). */
export function createMemberPicker(names: Iterable<string>): Picker | undefined {
  if (pickerKind === 'none') return undefined;
  return pickerKind === 'wasm' && MemberPicker.available ? new MemberPicker(names) : new JsMemberPicker(names);
}
