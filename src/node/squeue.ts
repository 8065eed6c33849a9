/**
 * Background squeue queries: the SLUID → job id table (the Sluid field exists
 * in squeue 26.05+) and the optional job metadata (user, account, partition).
 * Each runs only when asked, at most once per interval, never on the scrape
 * path; a failed run keeps the previous table.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Logger } from '../log.js';
import { SLUID_RE } from './cgroups.js';
import type { JobIdTable } from './jobids.js';

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
  private stopped = false;
  private child: ChildProcess | undefined;
  private lastRunMs = -Infinity;

  constructor(
    private readonly opts: SqueueOptions,
    private readonly what: string,
    private readonly format: string,
    private readonly parse: (stdout: string) => Map<string, T>,
  ) {}

  lookup(key: string): T | undefined {
    return this.table.get(key);
  }

  /** Asks for a refresh; never blocks. */
  want(): void {
    const now = Date.now();
    if (this.stopped || this.running || now - this.lastRunMs < this.opts.minIntervalMs) return;
    this.running = true;
    this.lastRunMs = now;
    void this.refresh().finally(() => {
      this.running = false;
    });
  }

  /** Kills a run in flight, with everything it started, and refuses new ones. */
  stop(): void {
    this.stopped = true;
    if (this.child) killGroup(this.child);
  }

  private async refresh(): Promise<void> {
    const { path, nodeName, logger } = this.opts;
    const args = ['--noheader', `--nodelist=${nodeName}`, `--Format=${this.format}`];
    try {
      const stdout = await this.run(path, args);
      this.table = this.parse(stdout);
      logger.debug({ entries: this.table.size }, `squeue ${this.what} table refreshed`);
    } catch (err) {
      if (this.stopped) return;
      this.opts.onError?.();
      logger.warn({ path, err: (err as Error).message }, `squeue ${this.what} refresh failed; keeping the previous table`);
    }
  }

  /**
   * Runs squeue in a process group of its own: on a timeout, on stop and when it exits, the
   * whole group is killed, so nothing it started (a wrapper's children) outlives it.
   */
  private run(path: string, args: readonly string[]): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const child = spawn(path, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      this.child = child;
      const chunks: Buffer[] = [];
      let size = 0;
      let stderr = '';
      child.stderr?.on('data', (c: Buffer) => {
        if (stderr.length < 1000) stderr += c.toString('utf8');
      });
      let failure: Error | undefined;
      const fail = (err: Error): void => {
        failure ??= err;
        killGroup(child);
      };
      const timer = setTimeout(() => fail(new Error(`squeue timed out after ${this.opts.timeoutMs} ms`)), this.opts.timeoutMs);
      child.stdout?.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_OUTPUT) fail(new Error(`squeue output exceeds ${MAX_OUTPUT} bytes`));
        else chunks.push(c);
      });
      child.on('error', fail);
      child.on('exit', (code, signal) => {
        if (code !== 0 && !failure) failure = new Error(`squeue exited with ${signal ?? `status ${code}`}: ${stderr.trim().slice(0, 1000)}`);
        killGroup(child);
      });
      child.on('close', () => {
        clearTimeout(timer);
        this.child = undefined;
        if (failure) reject(failure);
        else resolve(Buffer.concat(chunks).toString('utf8'));
      });
    });
  }
}

/** SIGKILL to the child's process group; a group already gone is fine. */
function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // ESRCH: every member has exited already.
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
