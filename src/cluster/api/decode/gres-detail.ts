/**
 * A job's `gres_detail`: one string per node of the job, in the order its hostlist lists the
 * nodes, naming the GRES slurmctld gave the job there. Every API version that has the member
 * (v0.0.36–v0.0.38 and the data_parser family v0.0.39–v0.0.45) sends the same strings, an array
 * of them. An entry lists its GRES separated by commas outside parentheses, each in one of two
 * forms:
 *
 *   name[:type]:count(IDX:list)   the indices are known: `gpu:h100:2(IDX:0-1)`, `gpu:3(IDX:0,2-3)`
 *   name[:type](CNT:count)        only a count (no index bitmap, e.g. a GRES without files)
 *
 * `list` is a bitmap in range form (`0-1,3`), or `N/A` for none. The index is the GRES index as
 * Slurm numbers the devices of that GRES on the node (its gres.conf order), which is neither the
 * device minor, nvidia-smi's index nor a CUDA ordinal. Only GPUs are kept; other GRES are read
 * (to keep the entry well-formed) and dropped. Never throws: what cannot be read is returned.
 */

/** One GPU Slurm allocated to a job on one node. */
export interface AllocatedGpu {
  /** The GRES index (`IDX:`), as a decimal string: a label value, never arithmetic. */
  readonly index: string;
  /** The GRES type (`h100` in `gpu:h100:2`); empty when the allocation names none. */
  readonly type: string;
}

/** What one `gres_detail` entry says about GPUs, and the GRES it could not read. */
export interface NodeGres {
  readonly gpus: readonly AllocatedGpu[];
  /** Items of the entry that are not in either form (kept verbatim for the log). */
  readonly unread: readonly string[];
}

/** No bitmap on one node holds more: a range beyond this is a broken entry, not a GPU count. */
export const MAX_INDICES_PER_ITEM = 4096;

const GPU = 'gpu';
const EMPTY: NodeGres = Object.freeze({ gpus: Object.freeze([]), unread: Object.freeze([]) });
const ITEM = /^([^()]+)\((IDX|CNT):([^()]*)\)$/;

/** Reads one node's entry. An empty entry (a node without GRES) gives nothing. */
export function parseNodeGres(entry: string): NodeGres {
  if (entry.trim() === '') return EMPTY;
  const gpus: AllocatedGpu[] = [];
  const unread: string[] = [];
  for (const item of splitItems(entry)) {
    const got = parseItem(item.trim());
    if (got === undefined) unread.push(item);
    else for (const g of got) gpus.push(g);
  }
  return { gpus, unread };
}

/** Splits on the commas between items; a comma inside `(IDX:0,2)` belongs to the index list. */
function splitItems(entry: string): string[] {
  const items: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < entry.length; i++) {
    const c = entry[i];
    if (c === '(') depth++;
    else if (c === ')') depth = Math.max(0, depth - 1);
    else if (c === ',' && depth === 0) {
      items.push(entry.slice(start, i));
      start = i + 1;
    }
  }
  items.push(entry.slice(start));
  return items;
}

/** The GPUs of one item ([] for another GRES or a count without indices); undefined when unreadable. */
function parseItem(item: string): AllocatedGpu[] | undefined {
  const m = ITEM.exec(item);
  if (m === null) return undefined;
  const [, head, kind, body] = m as unknown as [string, string, 'IDX' | 'CNT', string];
  const parts = head.split(':');
  if (kind === 'CNT') {
    // name[:type](CNT:n): no index to report, but the item is well-formed.
    return parts[0] !== '' && /^\d+$/.test(body) ? [] : undefined;
  }
  // name[:type]:count(IDX:list): the count is the last part; a type may itself hold a colon.
  const count = parts.pop();
  const name = parts.shift();
  if (name === undefined || name === '' || count === undefined || !/^\d+$/.test(count)) return undefined;
  const indices = parseIndexList(body);
  if (indices === undefined) return undefined;
  if (name !== GPU) return [];
  const type = parts.join(':');
  return indices.map((index) => ({ index: String(index), type }));
}

/** `0-1,3` → [0, 1, 3]; `N/A` or empty → []; undefined when malformed or implausibly large. */
export function parseIndexList(list: string): number[] | undefined {
  const text = list.trim();
  if (text === 'N/A' || text === '') return [];
  const out: number[] = [];
  for (const range of text.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(range.trim());
    if (m === null) return undefined;
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo || out.length + (hi - lo + 1) > MAX_INDICES_PER_ITEM) return undefined;
    for (let i = lo; i <= hi; i++) out.push(i);
  }
  return out;
}

/**
 * The member as sent: an array of strings. A missing or non-array member is undefined (the
 * version or job has none); an element that is not a string is kept as unreadable text, and a
 * null one stands for a node without GRES.
 */
export function readGresDetail(v: unknown): readonly string[] | undefined {
  if (!Array.isArray(v)) return undefined;
  if (v.length === 0) return EMPTY_LIST;
  return (v as unknown[]).map((e) => (typeof e === 'string' ? e : e == null ? '' : NOT_TEXT));
}

const EMPTY_LIST: readonly string[] = Object.freeze([]);
/** What a non-string element reads as: it matches neither form, so it is counted as unreadable. */
export const NOT_TEXT = '(not text)';
