/**
 * Background squeue queries: the SLUID → job id table (the Sluid field exists
 * in squeue 26.05+) and the optional job metadata (user, account, partition).
 * Each runs only when asked, at most once per interval, never on the scrape
 * path; a failed run keeps the previous table.
 */
import type { Logger } from '../../log.js';
import { SLUID_RE } from './cgroups.js';
import type { JobIdTable } from './jobids.js';
import { ChildRunner } from '../../child-runner.js';

export interface SqueueOptions {
  readonly path: string;
  readonly nodeName: string;
  readonly minIntervalMs: number;
  readonly timeoutMs: number;
  readonly logger: Logger;
  readonly onError?: () => void;
}

const MAX_OUTPUT = 16 << 20;

/** One squeue query whose output is parsed into a keyed table, refreshed on request. */
class BackgroundSqueue<T> {
  private table = new Map<string, T>();
  private running = false;
  private readonly runner: ChildRunner;
  private lastRunMs = -Infinity;

  constructor(
    private readonly opts: SqueueOptions,
    private readonly what: string,
    private readonly format: string,
    private readonly parse: (stdout: string) => Map<string, T>,
  ) {
    this.runner = new ChildRunner(
      'squeue',
      { timeoutMs: opts.timeoutMs, maxOutput: MAX_OUTPUT },
      { logger: opts.logger },
    );
  }

  lookup(key: string): T | undefined {
    return this.table.get(key);
  }

  /** Asks for a refresh; never blocks. */
  want(): void {
    const now = Date.now();
    if (this.runner.isStopped || this.running || now - this.lastRunMs < this.opts.minIntervalMs) return;
    this.running = true;
    this.lastRunMs = now;
    void this.refresh().finally(() => {
      this.running = false;
    });
  }

  /** Kills a run in flight, with everything it started, and refuses new ones. */
  stop(): void {
    this.runner.stop();
  }

  private async refresh(): Promise<void> {
    const { path, nodeName, logger } = this.opts;
    const args = ['--noheader', `--nodelist=${nodeName}`, `--Format=${this.format}`];
    try {
      const stdout = await this.runner.run(path, args);
      this.table = this.parse(stdout);
      logger.debug({ entries: this.table.size }, `squeue ${this.what} table refreshed`);
    } catch (err) {
      if (this.runner.isStopped) return;
      this.opts.onError?.();
      logger.warn(
        { path, err: (err as Error).message },
        `squeue ${this.what} refresh failed; keeping the previous table`,
      );
    }
  }
}

/** A background source the agent stops on shutdown (its squeue run in flight is killed). */
export interface Stoppable {
  stop(): void;
}

/** SLUID → job id (the `Sluid` field exists in squeue 26.05+). */
export function squeueJobIds(opts: SqueueOptions): JobIdTable & Stoppable {
  return new BackgroundSqueue(opts, 'SLUID', 'JobID:|,Sluid:', parseSqueue);
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

export interface JobMetadata {
  readonly user_name: string;
  readonly account: string;
  readonly slurm_partition: string;
}

/** Job metadata for the job series' extra labels; asked for while jobs are on the node. */
export interface JobMetadataSource {
  lookup(jobId: string): JobMetadata | undefined;
  want(): void;
}

/** Job id → user, account, partition. */
export function squeueMetadata(opts: SqueueOptions): JobMetadataSource & Stoppable {
  return new BackgroundSqueue(opts, 'job metadata', 'JobID:|,UserName:|,Account:|,Partition:', parseMetadata);
}

/** Lines of `<jobid>|<user>|<account>|<partition>`; anything else is ignored. */
export function parseMetadata(text: string): Map<string, JobMetadata> {
  const out = new Map<string, JobMetadata>();
  for (const line of text.split('\n')) {
    const [job, user, account, partition] = line.split('|').map((s) => s.trim());
    if (job && /^\d+$/.test(job) && user !== undefined && account !== undefined && partition !== undefined) {
      out.set(job, { user_name: user, account, slurm_partition: partition });
    }
  }
  return out;
}
