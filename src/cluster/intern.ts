/**
 * One copy of each repeated value in a decoded list. JSON.parse gives every job its own copy of
 * strings that repeat across a cluster (TRES strings, state words, partitions, users, output
 * paths shared by stdout and stderr) and of small objects (state arrays, exit codes); at 100k
 * jobs sharing them halves the memory the stored jobs take (~700 → ~380 bytes a job). Applied to
 * each element as it is decoded, so the unshared copies die young, during the response.
 */

/** The fields of T worth sharing: strings (by value) and small arrays or objects (by JSON text). */
export interface InternFields<T> {
  readonly strings: readonly (keyof T)[];
  readonly values: readonly (keyof T)[];
  /**
   * String fields that usually equal another field of the same item and seldom another item's
   * (a job's stdout and stderr paths, one file per job): `[field, other]` makes `field` the
   * other's copy when they are equal, without pooling either.
   */
  readonly sameAs?: readonly (readonly [keyof T, keyof T])[];
}

/** The pools of one response: nothing is kept between collections. */
export class Interner<T extends object> {
  private readonly strings = new Map<string, string>();
  private readonly values = new Map<string, unknown>();

  constructor(private readonly fields: InternFields<T>) {}

  /**
   * Replaces, in place, each listed field of `item` by the first equal value seen. The item must
   * be freshly decoded and not yet shared: the object keeps its shape, only what it points to
   * changes.
   */
  add(item: T): void {
    const rec = item as Record<keyof T, unknown>;
    for (const [f, other] of this.fields.sameAs ?? []) if (rec[f] === rec[other]) rec[f] = rec[other];
    for (const f of this.fields.strings) {
      const s = rec[f];
      if (typeof s !== 'string') continue;
      const seen = this.strings.get(s);
      if (seen === undefined) this.strings.set(s, s);
      else rec[f] = seen;
    }
    for (const f of this.fields.values) {
      const v = rec[f];
      if (v === undefined || v === null || typeof v !== 'object') continue;
      const key = valueKey(v);
      const seen = this.values.get(key);
      if (seen === undefined) this.values.set(key, v);
      else rec[f] = seen;
    }
  }
}

/**
 * A key telling values apart, made without JSON.stringify for the usual shape, an array of words
 * (`["RUNNING"]`): its length, then its words, NUL-separated. It starts with a digit, where the
 * JSON text of any other array or object starts with "[" or "{".
 */
function valueKey(v: object): string {
  if (Array.isArray(v) && v.every((w) => typeof w === 'string' && !w.includes('\u0000')))
    return `${v.length}\u0000${v.join('\u0000')}`;
  return JSON.stringify(v);
}
