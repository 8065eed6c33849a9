/**
 * Per-render caches of the native families: TRES strings parsed once, hosts numbered once, and
 * the distinct nodes of a group as a bitset.
 */
import { expandHostlist } from './hostlist.js';
import type { SlurmJob } from './model.js';
import { parseTres, type Tres } from './tres.js';

export type TresOf = (s: string | undefined) => Tres;
/** A job's nodes as small integers (one per distinct host name in the render). */
export type HostsOf = (job: SlurmJob) => readonly number[];
export const NO_HOSTS: readonly number[] = [];
export const NO_HOSTS_OF: HostsOf = () => NO_HOSTS;

/** TRES strings repeat across jobs and nodes (a few shapes): each distinct one is parsed once per render. */
export function tresCache(): TresOf {
  const cache = new Map<string, Tres>();
  return (s) => {
    const key = s ?? '';
    let t = cache.get(key);
    if (t === undefined) cache.set(key, (t = parseTres(s)));
    return t;
  };
}

/**
 * The nodes of a job (hostlists differ from job to job: expanded each time), each host numbered once:
 * the distinct-node counts of a group are then bits, not string sets (100k jobs, 3 groups each).
 * An unreadable hostlist stands for `node_count` nodes of its own.
 */
export function hostsCache(): HostsOf {
  const ids = new Map<string, number>();
  const idOf = (h: string): number => {
    let id = ids.get(h);
    if (id === undefined) ids.set(h, (id = ids.size));
    return id;
  };
  return (job) => {
    let names: string[];
    try {
      names = expandHostlist(job.nodes);
    } catch {
      names = Array.from({ length: job.node_count ?? 0 }, (_, i) => `\0${job.job_id}\0${i}`);
    }
    return names.map(idOf);
  };
}

/** Distinct node numbers seen, as a bitset that grows with the largest. */
export class NodeBits {
  private bits = new Uint32Array(0);
  size = 0;

  add(id: number): void {
    const word = id >>> 5;
    if (word >= this.bits.length) {
      const grown = new Uint32Array(Math.max(word + 1, this.bits.length * 2));
      grown.set(this.bits);
      this.bits = grown;
    }
    const bit = 1 << (id & 31);
    if ((this.bits[word] as number) & bit) return;
    this.bits[word] = (this.bits[word] as number) | bit;
    this.size++;
  }
}
