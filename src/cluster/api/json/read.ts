/**
 * Tolerant readers for untrusted JSON values from slurmrestd.
 *
 * Each reader takes `unknown` and returns a typed value or `undefined`; none throws. A field of
 * the wrong type reads as absent, which is what the model promises its consumers: every field
 * is optional, and a bad field must cost that field only, never the whole node or job.
 */

export type JsonRecord = Readonly<Record<string, unknown>>;

export function isRecord(v: unknown): v is JsonRecord {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A member of an object, or undefined when `v` is not an object. */
export function field(v: unknown, key: string): unknown {
  return isRecord(v) && Object.prototype.hasOwnProperty.call(v, key) ? v[key] : undefined;
}

/** Walks nested objects: `path(v, 'meta', 'slurm', 'release')`. */
export function path(v: unknown, ...keys: string[]): unknown {
  let cur = v;
  for (const k of keys) cur = field(cur, k);
  return cur;
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** A string, or a finite number rendered as one (ids are numbers in some versions). */
export function idString(v: unknown): string | undefined {
  if (typeof v === 'string') return v.trim() === '' ? undefined : v.trim();
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return undefined;
}

export function bool(v: unknown): boolean | undefined {
  return typeof v === 'boolean' ? v : undefined;
}

/**
 * A list of strings. Slurm sends lists as JSON arrays (v0.0.38 `partitions`, v0.0.4x `csv_string`)
 * and sometimes as one comma-separated string (v0.0.38 `features`); both are accepted. Non-string
 * entries are dropped.
 */
export function strList(v: unknown): string[] {
  if (typeof v === 'string')
    return v
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  if (!Array.isArray(v)) return [];
  const out: string[] = [];
  for (const e of v) if (typeof e === 'string' && e !== '') out.push(e);
  return out;
}

/** Upper-cased, de-duplicated words, order kept. */
export function upperWords(words: readonly string[]): string[] {
  const seen = new Set<string>();
  for (const w of words) {
    const u = w.trim().toUpperCase();
    if (u !== '') seen.add(u);
  }
  return [...seen];
}

/** Slurm's "no value" and "infinite" sentinels as they appear when printed as plain numbers. */
const NO_VAL32 = 0xfffffffe;
const INFINITE32 = 0xffffffff;
/** NO_VAL64/INFINITE64 (2^64-2, 2^64-1) both round to 2^64 as doubles: anything this big is a sentinel. */
const SENTINEL64_MIN = 2 ** 63;

/** The three things a Slurm number can be. */
export type NoVal =
  { readonly kind: 'number'; readonly value: number } | { readonly kind: 'infinite' } | { readonly kind: 'unset' };

const UNSET: NoVal = { kind: 'unset' };
const INFINITE: NoVal = { kind: 'infinite' };

export interface NoValOptions {
  /**
   * Treat plain 0xFFFFFFFE / 0xFFFFFFFF as NO_VAL / INFINITE. Only for fields that are uint32 in
   * Slurm (time limits, counts, array ids): elsewhere these are legitimate values.
   */
  readonly u32?: boolean;
}

/**
 * Reads a number in any of its wire forms: a plain number (v0.0.36–v0.0.39, and many fields in
 * every version), or a `{set, infinite, number}` struct (v0.0.40+). The spec says `number` is to be
 * ignored unless `set` is true and `infinite` false.
 */
export function noVal(v: unknown, opts: NoValOptions = {}): NoVal {
  if (typeof v === 'number') return plainNoVal(v, opts);
  if (!isRecord(v)) return UNSET;
  if (v['infinite'] === true) return INFINITE;
  if (v['set'] !== true) return UNSET;
  const n = v['number'];
  return typeof n === 'number' ? plainNoVal(n, opts) : UNSET;
}

function plainNoVal(n: number, opts: NoValOptions): NoVal {
  if (!Number.isFinite(n) || n >= SENTINEL64_MIN) return UNSET;
  if (opts.u32 === true && n === INFINITE32) return INFINITE;
  if (opts.u32 === true && n === NO_VAL32) return UNSET;
  return { kind: 'number', value: n };
}

/** A number, or undefined when unset, infinite, absent or of the wrong type. */
export function num(v: unknown, opts?: NoValOptions): number | undefined {
  const r = noVal(v, opts);
  return r.kind === 'number' ? r.value : undefined;
}

/** A non-negative integer count. */
export function count(v: unknown, opts?: NoValOptions): number | undefined {
  const n = num(v, opts);
  return n !== undefined && n >= 0 ? n : undefined;
}

/** A Unix time in seconds; 0, NO_VAL and INFINITE all mean "no time" here. */
export function unixTime(v: unknown): number | undefined {
  const n = num(v, { u32: true });
  return n !== undefined && n > 0 ? n : undefined;
}
