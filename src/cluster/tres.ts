/**
 * Trackable resources (TRES).
 *
 * Slurm prints TRES as `cpu=4,mem=8G,node=1,billing=4,gres/gpu=2,gres/gpu:tesla=2` (controller
 * `tres`, `tres_alloc_str`, `tres_req_str`), and slurmdbd returns them as arrays of
 * `{type, name, id, count}`. This module parses the string form; the decoders render the array
 * form into it (api/decode/decode-tres.ts), so the rest of the agent deals with one representation.
 */
import type { SlurmJob } from './model.js';

export interface Tres {
  /** Every `key=value` pair as written, keys lower-cased (e.g. `gres/gpu:tesla` → `2`). */
  readonly entries: ReadonlyMap<string, string>;
  readonly cpus?: number;
  readonly memory_bytes?: number;
  readonly nodes?: number;
  readonly billing?: number;
  /** GPUs: the untyped `gres/gpu` total, or the sum of typed `gres/gpu:<type>` entries. */
  readonly gpus?: number;
}

const MIB = 1024 * 1024;
const SIZE_UNITS: Readonly<Record<string, number>> = {
  K: 1024,
  M: MIB,
  G: MIB * 1024,
  T: MIB * 1024 * 1024,
  P: MIB * 1024 * 1024 * 1024,
};
const SIZE_RE = /^(\d+(?:\.\d+)?)([KMGTP])?$/i;
const COUNT_RE = /^\d+(?:\.\d+)?$/;

/**
 * A TRES memory value in bytes. Suffixes K/M/G/T/P are powers of 1024; a bare number is MiB,
 * because Slurm stores memory TRES in megabytes and prints them without a unit when it cannot
 * scale them.
 */
export function parseTresMemory(raw: string): number | undefined {
  const m = SIZE_RE.exec(raw.trim());
  if (m === null) return undefined;
  const unit = m[2] === undefined ? MIB : SIZE_UNITS[m[2].toUpperCase()];
  if (unit === undefined) return undefined;
  return Math.round(Number(m[1]) * unit);
}

/** A plain TRES count (`cpu`, `node`, `billing`, `gres/...`). */
export function parseTresCount(raw: string): number | undefined {
  const t = raw.trim();
  return COUNT_RE.test(t) ? Number(t) : undefined;
}

export function parseTresEntries(s: string | null | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (typeof s !== 'string') return out;
  for (const part of s.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const key = part.slice(0, eq).trim().toLowerCase();
    // The first occurrence wins: Slurm never repeats a key, and a repeat is not worth guessing at.
    if (key !== '' && !out.has(key)) out.set(key, part.slice(eq + 1).trim());
  }
  return out;
}

/**
 * GPU count. Slurm lists both the untyped total and each typed share (`gres/gpu=2`,
 * `gres/gpu:tesla=2`): the typed entries repeat the total, so they are summed only when the
 * total is missing.
 */
export function tresGpuCount(entries: ReadonlyMap<string, string>): number | undefined {
  const total = entries.get('gres/gpu');
  if (total !== undefined) return parseTresCount(total);
  let sum: number | undefined;
  for (const [k, v] of entries) {
    if (!k.startsWith('gres/gpu:')) continue;
    const n = parseTresCount(v);
    if (n !== undefined) sum = (sum ?? 0) + n;
  }
  return sum;
}

/** Distinct TRES strings remembered; a cluster has a few shapes of node and of allocation. */
const TRES_CACHE_SIZE = 4096;
const parsedTres = new Map<string, Tres>();

/**
 * The parsed form of a TRES string. Results are shared between callers (they are read-only): on a
 * 100k-job cluster the same few strings are parsed for every job and node, each collection.
 */
export function parseTres(s: string | null | undefined): Tres {
  if (typeof s !== 'string') return parseTresUncached(s);
  let tres = parsedTres.get(s);
  if (tres === undefined) {
    // A full cache starts again: bounded memory when every job's string is different.
    if (parsedTres.size >= TRES_CACHE_SIZE) parsedTres.clear();
    tres = parseTresUncached(s);
    parsedTres.set(s, tres);
  }
  return tres;
}

function parseTresUncached(s: string | null | undefined): Tres {
  const entries = parseTresEntries(s);
  const get = (k: string): number | undefined => {
    const v = entries.get(k);
    return v === undefined ? undefined : parseTresCount(v);
  };
  const mem = entries.get('mem');
  const memory = mem === undefined ? undefined : parseTresMemory(mem);
  const gpus = tresGpuCount(entries);
  const cpus = get('cpu');
  const nodes = get('node');
  const billing = get('billing');
  return {
    entries,
    ...(cpus !== undefined ? { cpus } : {}),
    ...(memory !== undefined ? { memory_bytes: memory } : {}),
    ...(nodes !== undefined ? { nodes } : {}),
    ...(billing !== undefined ? { billing } : {}),
    ...(gpus !== undefined ? { gpus } : {}),
  };
}

/**
 * CPUs of a job, the way Soperator's exporter counts them: allocated TRES, else requested TRES,
 * else the job's `cpus` field.
 */
export function jobCpuCount(job: Pick<SlurmJob, 'tres_alloc_str' | 'tres_req_str' | 'cpus'>): number | undefined {
  return positive(parseTres(job.tres_alloc_str).cpus) ?? positive(parseTres(job.tres_req_str).cpus) ?? job.cpus;
}

/** A TRES count of 0 says nothing was counted, so the next source is asked (as Soperator does). */
function positive(n: number | undefined): number | undefined {
  return n !== undefined && n > 0 ? n : undefined;
}

/**
 * Memory of a job in bytes: allocated TRES, else requested TRES, else memory_per_node × node_count.
 */
export function jobMemoryBytes(
  job: Pick<SlurmJob, 'tres_alloc_str' | 'tres_req_str' | 'memory_per_node' | 'node_count'>,
): number | undefined {
  const fromTres =
    positive(parseTres(job.tres_alloc_str).memory_bytes) ?? positive(parseTres(job.tres_req_str).memory_bytes);
  if (fromTres !== undefined) return fromTres;
  if (job.memory_per_node === undefined || job.node_count === undefined) return undefined;
  return job.memory_per_node * job.node_count * MIB;
}
