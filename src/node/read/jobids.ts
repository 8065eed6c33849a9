/**
 * SLUID → job id, never guessed and never on the scrape path: a cache, then
 * the slurmstepd process titles of the allocation (all must agree), then the
 * background squeue table when one is configured.
 */
import type { Allocation } from './cgroups.js';
import type { Problems } from './problems.js';
import { join, readSmall } from './roots.js';

export type Resolution = { readonly jobId: string } | { readonly unresolved: string };

/** A source refreshed in the background (squeue); the resolver only reads its table. */
export interface JobIdTable {
  lookup(sluid: string): string | undefined;
  /** Asks for a refresh because SLUIDs are waiting; never blocks. */
  want(): void;
}

const TITLE_RE = /^slurmstepd: \[(\d+)\.[^\]]+\]/;

/** `slurmstepd: [<jobid>.<step>]` or `[<jobid>.<step> stepmgr]`; argv may be NUL-separated. */
export function parseStepdTitle(cmdline: string): string | undefined {
  return TITLE_RE.exec(cmdline.replace(/\0+/g, ' ').trim())?.[1];
}

export class JobIdResolver {
  private readonly cache = new Map<string, string>();

  constructor(
    private readonly procfs: string,
    private readonly table?: JobIdTable,
  ) {}

  resolve(allocations: readonly Allocation[], problems: Problems): Map<string, Resolution> {
    const out = new Map<string, Resolution>();
    const waiting: string[] = [];
    const live = new Set<string>();
    for (const a of allocations) {
      const r = this.resolveOne(a, problems);
      out.set(a.key, r);
      if (a.idKind === 'sluid') {
        live.add(a.id);
        if ('unresolved' in r) waiting.push(a.id);
      }
    }
    // SLUIDs are unique per job: forget the ones whose allocation is gone.
    for (const sluid of this.cache.keys()) if (!live.has(sluid)) this.cache.delete(sluid);
    if (waiting.length > 0) this.table?.want();
    return out;
  }

  private resolveOne(a: Allocation, problems: Problems): Resolution {
    if (a.idKind === 'jobid') return { jobId: a.id };
    if (a.idKind === 'unknown') return { unresolved: `directory name "${a.id}" is neither job_<id> nor a SLUID` };
    const cached = this.cache.get(a.id);
    if (cached) return { jobId: cached };
    const fromTitles = this.fromStepdTitles(a, problems);
    const jobId = 'jobId' in fromTitles ? fromTitles.jobId : this.table?.lookup(a.id);
    if (jobId === undefined) return fromTitles;
    this.cache.set(a.id, jobId);
    return { jobId };
  }

  private fromStepdTitles(a: Allocation, problems: Problems): Resolution {
    const ids = new Set<string>();
    for (const pid of a.stepdPids) {
      const r = readSmall(join(this.procfs, String(pid), 'cmdline'));
      if (!r.ok) {
        if (r.kind !== 'gone') problems.add('jobid', r.kind, r.detail);
        continue;
      }
      const id = parseStepdTitle(r.value);
      if (id === undefined) return { unresolved: `stepd ${pid} title is not "slurmstepd: [<jobid>.<step>]"` };
      ids.add(id);
    }
    if (ids.size === 1) return { jobId: [...ids][0] as string };
    if (ids.size > 1) {
      problems.add('jobid', 'malformed', `SLUID ${a.id}: stepd titles disagree (${[...ids].join(', ')})`);
      return { unresolved: `stepd titles disagree: ${[...ids].join(', ')}` };
    }
    return { unresolved: 'no readable slurmstepd title' };
  }
}
