/**
 * Background SLUID → job id table from squeue (26.05+ has the Sluid field).
 * Runs only when SLUIDs are waiting, at most once per interval, never on the
 * scrape path; a failed run keeps the previous table.
 */
import { execFile } from 'node:child_process';
import type { Logger } from '../log.js';
import type { JobIdTable } from './jobids.js';
import { SLUID_RE } from './cgroups.js';

export interface SqueueOptions {
  readonly path: string;
  readonly nodeName: string;
  readonly minIntervalMs: number;
  readonly timeoutMs: number;
  readonly logger: Logger;
  readonly onError?: () => void;
}

export class SqueueTable implements JobIdTable {
  private table = new Map<string, string>();
  private running = false;
  private lastRunMs = -Infinity;

  constructor(private readonly opts: SqueueOptions) {}

  lookup(sluid: string): string | undefined {
    return this.table.get(sluid);
  }

  want(sluids: readonly string[]): void {
    const now = Date.now();
    if (this.running || now - this.lastRunMs < this.opts.minIntervalMs) return;
    this.running = true;
    this.lastRunMs = now;
    void this.refresh(sluids.length).finally(() => {
      this.running = false;
    });
  }

  /** Resolves once the refresh finished (tests and the agent's shutdown wait on it). */
  private async refresh(waiting: number): Promise<void> {
    const { path, nodeName, timeoutMs, logger } = this.opts;
    const args = ['--noheader', `--nodelist=${nodeName}`, '--Format=JobID:|,Sluid:'];
    try {
      const stdout = await new Promise<string>((resolve, reject) =>
        execFile(path, args, { timeout: timeoutMs, maxBuffer: 16 << 20 }, (err, out) => (err ? reject(err) : resolve(out))),
      );
      this.table = parseSqueue(stdout);
      logger.debug({ entries: this.table.size, waiting }, 'squeue SLUID table refreshed');
    } catch (err) {
      this.opts.onError?.();
      logger.warn({ path, err: (err as Error).message }, 'squeue refresh failed; keeping the previous SLUID table');
    }
  }
}

/** Lines of `<jobid>|<sluid>`, padded or not; anything else is ignored. */
export function parseSqueue(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const [job, sluid] = line.split('|').map((s) => s.trim());
    if (job && sluid && /^\d+$/.test(job) && SLUID_RE.test(sluid)) out.set(sluid, job);
  }
  return out;
}
