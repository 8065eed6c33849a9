/**
 * What the fd scan (owners.ts) keeps of a process's fd names between cycles: enough to tell a
 * steady table from a changed one and, when it changed, which of its fds are new (only those are
 * read).
 *
 * - Up to LISTING_FDS fds, the names joined by '/' (no name holds one): a few bytes an fd, and the
 *   steady compare is a walk along one string.
 * - A larger table keeps its fd numbers (FdNumbers): one bit a number up to its largest where the
 *   table is dense, as the kernel fills it (lowest free number first), else the numbers sorted, four
 *   bytes each. A user can hold millions of fds (on /dev/null, say), where the names joined cost
 *   some 6 bytes an fd; a dense million costs 128 KiB.
 * - Past the room the scan gives (MAX_NUMBERS_BYTES over all processes), or for names that are not
 *   fd numbers (a tree that is not procfs), a digest: a change then reads the whole table again.
 */

/** The most fds whose names an entry keeps joined (above: FdNumbers, or a digest). */
export const LISTING_FDS = 8192;

/**
 * The most bytes of FdNumbers the entries of one scan keep, all processes together: a user's
 * sparse tables (an fd at each 32nd number) cost 4 bytes an fd, and past this their tables are
 * kept as digests, read whole again when they change.
 */
export const MAX_NUMBERS_BYTES = 8 * 2 ** 20;

/** What an entry keeps of a process's fd names. */
export type Listing = string | FdNumbers;

/** The fds of a kept listing, to tell which of a changed table's are new. */
export interface KnownFds {
  has(fd: string): boolean;
  readonly size: number;
}

/** The listing an entry keeps of `names`, within `room` bytes for FdNumbers. */
export function listingOf(names: readonly string[], room: number): Listing {
  if (names.length <= LISTING_FDS) return names.join('/');
  const numbers = FdNumbers.of(names);
  return numbers !== undefined && numbers.bytes <= room ? numbers : digestOf(names);
}

/** The bytes a listing keeps beside its entry's own: those of FdNumbers, which the scan's room bounds. */
export function numbersBytes(listing: Listing): number {
  return typeof listing === 'string' ? 0 : listing.bytes;
}

/** How much a kept listing costs the agent's memory: a string's characters, or FdNumbers' bytes (an array buffer). */
export function listingSize(listing: Listing): number {
  return typeof listing === 'string' ? listing.length : listing.bytes;
}

/** The fds of a kept listing; none known for a digest (the whole table is read). */
export function knownFds(listing: Listing): KnownFds | undefined {
  if (typeof listing !== 'string') return listing;
  return isDigest(listing) ? undefined : new Set(listing.split('/'));
}

/**
 * Whether `names` are the kept listing's. Joined names are compared in order (the kernel lists a
 * steady table alike each time), walked in place: joining this cycle's names to compare would make
 * a string per process and cycle for nothing.
 */
export function sameNames(listing: Listing, names: readonly string[]): boolean {
  if (typeof listing !== 'string') return listing.same(names);
  if (isDigest(listing)) return names.length > LISTING_FDS && digestOf(names) === listing;
  const end = listing.length;
  let at = 0;
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string;
    if (i > 0 && listing.charCodeAt(at++) !== 47) return false; // '/'
    const len = name.length;
    if (at + len > end) return false;
    // Character by character: fd names are a few digits, and under the node agent's
    // --optimize-for-size a call to startsWith for each took 1.6 times as long (bench of 864 × 256).
    for (let j = 0; j < len; j++) if (listing.charCodeAt(at + j) !== name.charCodeAt(j)) return false;
    at += len;
  }
  return at === end;
}

/**
 * The fd numbers of one table: a bitmap where it costs no more than the numbers sorted (at least one
 * number in 32 held), else the numbers sorted.
 */
export class FdNumbers implements KnownFds {
  private constructor(
    private readonly bits: Uint8Array | undefined,
    private readonly sorted: Uint32Array | undefined,
    readonly size: number,
  ) {}

  /** The numbers of `names`, or undefined where one is not an fd number or one repeats. */
  static of(names: readonly string[]): FdNumbers | undefined {
    const numbers = new Uint32Array(names.length);
    let max = 0;
    let ascending = true;
    for (let i = 0; i < names.length; i++) {
      const n = fdNumber(names[i] as string);
      if (n < 0) return undefined;
      numbers[i] = n;
      if (i > 0 && n <= max) ascending = false;
      if (n > max) max = n;
    }
    // procfs lists a table in ascending order: a sort only for other trees.
    if (!ascending) numbers.sort();
    for (let i = 1; i < numbers.length; i++) if (numbers[i] === numbers[i - 1]) return undefined;
    const bitBytes = (max >>> 3) + 1;
    if (bitBytes > numbers.byteLength) return new FdNumbers(undefined, numbers, names.length);
    const bits = new Uint8Array(bitBytes);
    for (const n of numbers) bits[n >>> 3] = (bits[n >>> 3] as number) | (1 << (n & 7));
    return new FdNumbers(bits, undefined, names.length);
  }

  get bytes(): number {
    return (this.bits ?? this.sorted)?.byteLength ?? 0;
  }

  has(fd: string): boolean {
    const n = fdNumber(fd);
    return n >= 0 && this.hasNumber(n);
  }

  /** Whether `names` are these numbers: as many, each one of them (a directory's names do not repeat). */
  same(names: readonly string[]): boolean {
    if (names.length !== this.size) return false;
    for (let i = 0; i < names.length; i++) if (!this.has(names[i] as string)) return false;
    return true;
  }

  private hasNumber(n: number): boolean {
    if (this.bits !== undefined) {
      const byte = n >>> 3;
      return byte < this.bits.length && ((this.bits[byte] as number) & (1 << (n & 7))) !== 0;
    }
    const sorted = this.sorted as Uint32Array;
    let lo = 0;
    let hi = sorted.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = sorted[mid] as number;
      if (at === n) return true;
      if (at < n) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }
}

/**
 * Above this, a name is not taken as an fd number (its table keeps a digest). Tables fill from the
 * lowest free number and `fs.nr_open` is 2^20 by default; a kernel allows up to 2^31 - 64 when it
 * is raised, and a table that reaches past 2^30 is read whole when it changes.
 */
const MAX_FD = 2 ** 30;

/** The number an fd name is, or -1 where it is not one as the kernel writes them (digits, no leading 0). */
export function fdNumber(name: string): number {
  const len = name.length;
  if (len === 0 || len > 10 || (len > 1 && name.charCodeAt(0) === 48)) return -1;
  let n = 0;
  for (let i = 0; i < len; i++) {
    const d = name.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n < MAX_FD ? n : -1;
}

/** A listing kept as a digest: it starts with a '#', which no fd name holds. */
function isDigest(listing: string): boolean {
  return listing.charCodeAt(0) === 35;
}

/**
 * `#<count>:<a>:<b>`, a and b two 32-bit FNV-1a-style hashes of the names joined by '/'. Names that
 * differ yet hash alike are taken as the same table until the next full rescan: the window an fd
 * closed and reopened under its number already leaves.
 */
function digestOf(names: readonly string[]): string {
  let a = 0x811c9dc5;
  let b = 0x2f0b3c4d;
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string;
    for (let j = 0; j <= name.length; j++) {
      const c = j < name.length ? name.charCodeAt(j) : 47; // '/' after each name
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995);
    }
  }
  return `#${names.length}:${(a >>> 0).toString(36)}:${(b >>> 0).toString(36)}`;
}
