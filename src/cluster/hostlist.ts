/**
 * Slurm hostlist expansion: `a[01-03],b5` → a01 a02 a03 b5.
 *
 * Supported: several comma-separated items; in each item any number of bracket groups
 * (`n[1-2]-ib[3-4]` expands as a cartesian product, the last group varying fastest); inside a
 * group, comma-separated single numbers and `lo-hi` ranges, in the order written
 * (`worker-[1,0]` → worker-1, worker-0). Zero padding is kept: a range takes the width of its
 * lower bound (`[08-10]` → 08 09 10).
 *
 * The size of the result is computed before anything is generated, so a hostile or corrupt
 * `[0-99999999999]` fails fast with a HostlistError instead of exhausting memory.
 */

export class HostlistError extends Error {
  override readonly name = 'HostlistError';
}

export const DEFAULT_MAX_HOSTS = 100_000;

/** Strings Slurm uses for "no nodes": slurmdbd says `None assigned`, older code `(null)`. */
const NO_NODES: ReadonlySet<string> = new Set(['', 'None assigned', '(null)']);

export function isEmptyHostlist(list: string | null | undefined): boolean {
  return list === null || list === undefined || NO_NODES.has(list.trim());
}

/** One numeric value of a bracket group: digits as printed, so padding survives. */
interface Range {
  readonly lo: number;
  readonly hi: number;
  readonly width: number;
}

type Part =
  { readonly kind: 'text'; readonly text: string } | { readonly kind: 'group'; readonly ranges: readonly Range[] };

/** Splits on commas that are not inside brackets. */
function splitTopLevel(list: string): string[] {
  const items: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    const c = list[i];
    if (c === '[') depth++;
    else if (c === ']') depth--;
    else if (c === ',' && depth === 0) {
      items.push(list.slice(start, i));
      start = i + 1;
    }
  }
  items.push(list.slice(start));
  return items.map((s) => s.trim()).filter((s) => s !== '');
}

const NUMBER_RE = /^\d+$/;

function parseRange(spec: string, item: string): Range {
  const dash = spec.indexOf('-');
  const loText = (dash < 0 ? spec : spec.slice(0, dash)).trim();
  const hiText = (dash < 0 ? spec : spec.slice(dash + 1)).trim();
  if (!NUMBER_RE.test(loText) || !NUMBER_RE.test(hiText)) {
    throw new HostlistError(`bad range "${spec}" in hostlist item "${item}"`);
  }
  const lo = Number(loText);
  const hi = Number(hiText);
  if (!Number.isSafeInteger(hi) || lo > hi) throw new HostlistError(`bad range "${spec}" in hostlist item "${item}"`);
  return { lo, hi, width: loText.length };
}

function parseItem(item: string): Part[] {
  const parts: Part[] = [];
  let i = 0;
  while (i < item.length) {
    const open = item.indexOf('[', i);
    const close = item.indexOf(']', i);
    if (close >= 0 && (open < 0 || close < open)) throw new HostlistError(`unbalanced "]" in hostlist item "${item}"`);
    if (open < 0) {
      parts.push({ kind: 'text', text: item.slice(i) });
      break;
    }
    if (open > i) parts.push({ kind: 'text', text: item.slice(i, open) });
    const end = item.indexOf(']', open);
    if (end < 0) throw new HostlistError(`unbalanced "[" in hostlist item "${item}"`);
    const body = item.slice(open + 1, end);
    if (body.includes('[')) throw new HostlistError(`nested "[" in hostlist item "${item}"`);
    const ranges = body.split(',').map((spec) => parseRange(spec, item));
    parts.push({ kind: 'group', ranges });
    i = end + 1;
  }
  return parts;
}

function groupSize(ranges: readonly Range[]): number {
  let n = 0;
  for (const r of ranges) n += r.hi - r.lo + 1;
  return n;
}

function itemSize(parts: readonly Part[]): number {
  let n = 1;
  for (const p of parts) if (p.kind === 'group') n *= groupSize(p.ranges);
  return n;
}

function groupValues(ranges: readonly Range[]): string[] {
  const out: string[] = [];
  for (const r of ranges) for (let v = r.lo; v <= r.hi; v++) out.push(String(v).padStart(r.width, '0'));
  return out;
}

function expandItem(parts: readonly Part[], out: string[]): void {
  let names = [''];
  for (const p of parts) {
    if (p.kind === 'text') {
      names = names.map((n) => n + p.text);
      continue;
    }
    const values = groupValues(p.ranges);
    const next: string[] = [];
    for (const n of names) for (const v of values) next.push(n + v);
    names = next;
  }
  for (const n of names) out.push(n);
}

/**
 * Expands a hostlist into host names, in Slurm's order. `""`, `None assigned` and `(null)` give
 * no hosts. Throws HostlistError on a malformed list or one larger than `maxHosts`.
 */
export function expandHostlist(list: string | null | undefined, maxHosts: number = DEFAULT_MAX_HOSTS): string[] {
  const items = parseHostlist(list, maxHosts);
  if (typeof items === 'string') return [items];
  const out: string[] = [];
  for (const parts of items) expandItem(parts, out);
  return out;
}

/**
 * Why `list` cannot be expanded (what expandHostlist would throw), or undefined when it can;
 * checked without generating the names.
 */
export function hostlistError(
  list: string | null | undefined,
  maxHosts: number = DEFAULT_MAX_HOSTS,
): string | undefined {
  try {
    parseHostlist(list, maxHosts);
    return undefined;
  } catch (err) {
    if (err instanceof HostlistError) return err.message;
    throw err;
  }
}

/** The parsed items of a list whose size is checked; a single host as itself. */
function parseHostlist(list: string | null | undefined, maxHosts: number): Part[][] | string {
  if (isEmptyHostlist(list)) return [];
  const text = (list as string).trim();
  // One host and no brackets: most jobs' lists, at a cost that counts on 100k jobs.
  if (text.indexOf(',') < 0 && text.indexOf('[') < 0 && text.indexOf(']') < 0) return text;
  const items = splitTopLevel(text).map(parseItem);
  let total = 0;
  for (const parts of items) {
    total += itemSize(parts);
    if (total > maxHosts) {
      throw new HostlistError(`hostlist expands to more than ${maxHosts} hosts: "${truncate(list as string)}"`);
    }
  }
  return items;
}

function truncate(s: string): string {
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
