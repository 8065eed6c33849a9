/**
 * Background reader of Slurm's GPU allocation on this node (the rule and its measurements:
 * gres.ts, docs/node-agent.md "GPUs"): `slurmd -G` gives the node's GPU device files in GRES index
 * order, re-read rarely (it changes when slurmd is reconfigured); `scontrol show job -d <id>` gives
 * a job's GRES indices, asked once per job that appears on the node (a job's GRES do not change
 * while it runs), at most MAX_JOBS_PER_RUN jobs per run and one run per interval: the controller
 * sees one small request per job and node, never a listing of the cluster's jobs per node and
 * cycle. Never on the scrape path; a failed run keeps the last table, is counted and logged.
 */
import fs from 'node:fs';
import type { Logger } from '../../log.js';
import { ChildRunner } from '../../child-runner.js';
import { deviceNumber } from './roots.js';
import { parseScontrolGpuIndices, parseSlurmdGpuFiles } from './gres.js';

/** A Slurm command: its path, and arguments before the command's own (a script run by /bin/sh). */
export interface SlurmTool {
  readonly path: string;
  readonly leadingArgs?: readonly string[];
}

export interface GpuAllocationOptions {
  readonly slurmd: SlurmTool;
  readonly scontrol: SlurmTool;
  readonly nodeName: string;
  /** scontrol runs at most this often. */
  readonly minIntervalMs: number;
  /** slurmd -G at most this often (also again after it failed, at the squeue pace). */
  readonly mapIntervalMs: number;
  readonly timeoutMs: number;
  readonly logger: Logger;
  readonly onError?: (source: 'slurmd' | 'scontrol') => void;
  /** The device number of a GRES File= path (default: stat of the path); undefined when none. */
  readonly deviceOf?: (path: string) => string | undefined;
}

/** Which GPU device numbers (`195:<minor>`) Slurm gave each job on this node, or why unknown. */
export type GpuAllocationTable =
  | {
      readonly known: true;
      /** Job id → device numbers; a job absent here is unknown (not yet seen, or its indices unmapped). */
      readonly jobs: ReadonlyMap<string, readonly string[]>;
      /** The node's GRES GPU files in index order, with their device numbers (explain). */
      readonly files: readonly { readonly path: string; readonly device?: string }[];
    }
  | { readonly known: false; readonly why: string };

export interface GpuAllocationSource {
  current(): GpuAllocationTable;
  /** The jobs on the node now (job ids): asks Slurm about those it has not answered for; never blocks. */
  want(jobIds: readonly string[]): void;
  /** Refreshes now, asking every job want() named, and settles when done (explain, tests). */
  refresh(): Promise<void>;
  stop(): void;
}

const MAX_OUTPUT = 1 << 20;
/** Jobs asked in one run; more wait for the next run (a node starting many jobs at once). */
const MAX_JOBS_PER_RUN = 16;
/** A job Slurm could not answer for (ended, a typo in a cgroup name) is asked again after this. */
const RETRY_MS = 60_000;
const JOB_ID = /^\d{1,10}$/;

function statDevice(path: string): string | undefined {
  try {
    const st = fs.statSync(path);
    return st.isCharacterDevice() ? deviceNumber(st.rdev) : undefined;
  } catch {
    return undefined;
  }
}

export class SlurmGpuAllocation implements GpuAllocationSource {
  private files: { path: string; device?: string }[] | undefined;
  /** Job id → its GRES indices on this node, as scontrol answered. */
  private readonly indices = new Map<string, readonly number[]>();
  /** Job id → when to ask again after scontrol could not answer. */
  private readonly failedUntil = new Map<string, number>();
  private present: readonly string[] = [];
  private table: GpuAllocationTable = { known: false, why: 'Slurm not asked yet' };
  private running: Promise<void> | undefined;
  private lastRunMs = -Infinity;
  private lastMapMs = -Infinity;
  private readonly runner: ChildRunner;
  private readonly deviceOf: (path: string) => string | undefined;

  constructor(private readonly opts: GpuAllocationOptions) {
    this.runner = new ChildRunner(
      'gres',
      { timeoutMs: opts.timeoutMs, maxOutput: MAX_OUTPUT },
      { logger: opts.logger },
    );
    this.deviceOf = opts.deviceOf ?? statDevice;
  }

  current(): GpuAllocationTable {
    return this.table;
  }

  want(jobIds: readonly string[]): void {
    this.present = jobIds.filter((j) => JOB_ID.test(j));
    if (this.runner.isStopped || this.running || Date.now() - this.lastRunMs < this.opts.minIntervalMs) return;
    const mapDue = this.files === undefined || Date.now() - this.lastMapMs >= this.opts.mapIntervalMs;
    if (mapDue || this.unasked().length > 0) void this.start(MAX_JOBS_PER_RUN);
    else this.publish();
  }

  async refresh(): Promise<void> {
    // A run want() started asks at most MAX_JOBS_PER_RUN jobs: once it ends, one for all the rest.
    await this.running;
    await this.start(Infinity);
  }

  private start(maxJobs: number): Promise<void> {
    this.running ??= this.run(maxJobs).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  stop(): void {
    this.runner.stop();
  }

  private async run(maxJobs: number): Promise<void> {
    this.lastRunMs = Date.now();
    if (this.files === undefined || Date.now() - this.lastMapMs >= this.opts.mapIntervalMs) await this.readMap();
    if (this.files === undefined) return;
    for (const job of this.unasked().slice(0, maxJobs)) {
      if (this.runner.isStopped) return;
      await this.readJob(job);
    }
    this.publish();
  }

  /** Jobs on the node that scontrol has not answered for (and is not waiting to be asked again). */
  private unasked(): string[] {
    const now = Date.now();
    return this.present.filter((j) => !this.indices.has(j) && (this.failedUntil.get(j) ?? 0) <= now);
  }

  /** The table for the jobs on the node now; answers of jobs gone are dropped. */
  private publish(): void {
    const files = this.files;
    if (files === undefined) return;
    const present = new Set(this.present);
    for (const map of [this.indices, this.failedUntil]) for (const j of map.keys()) if (!present.has(j)) map.delete(j);
    const jobs = new Map<string, string[]>();
    for (const [job, indices] of this.indices) {
      const devices = indices.map((i) => files[i]?.device);
      // An index beyond slurmd's list or a File= that is no device: this job's allocation is unknown.
      if (devices.every((d): d is string => d !== undefined)) jobs.set(job, devices);
    }
    this.table = { known: true, jobs, files };
  }

  /** slurmd -G writes its GRES lines to stderr: the shell folds them into the stdout the runner reads. */
  private async readMap(): Promise<void> {
    const { slurmd, nodeName, logger } = this.opts;
    try {
      const command = [slurmd.path, ...(slurmd.leadingArgs ?? [])];
      const out = await this.runner.run('/bin/sh', [
        '-c',
        'n=$1; shift; exec "$@" -G -N "$n" 2>&1',
        'sh',
        nodeName,
        ...command,
      ]);
      const parsed = parseSlurmdGpuFiles(out);
      if ('why' in parsed) throw new Error(parsed.why);
      this.files = parsed.files.map((path) => {
        const device = this.deviceOf(path);
        return device === undefined ? { path } : { path, device };
      });
      this.lastMapMs = Date.now();
      logger.debug({ files: this.files }, 'slurmd -G: GPU GRES files read');
    } catch (err) {
      this.failed('slurmd', slurmd.path, err);
    }
  }

  private async readJob(job: string): Promise<void> {
    const { scontrol, nodeName, logger } = this.opts;
    try {
      const out = await this.runner.run(scontrol.path, [...(scontrol.leadingArgs ?? []), 'show', 'job', '-d', job]);
      const indices = parseScontrolGpuIndices(out, nodeName);
      if (indices === undefined) throw new Error(`job ${job}: no GRES line names ${nodeName}`);
      const unmapped = indices.filter((i) => this.files?.[i]?.device === undefined);
      if (unmapped.length > 0)
        logger.warn(
          { job, indices, files: this.files },
          'GPU GRES index without a device on this node; allocation unknown',
        );
      this.indices.set(job, indices);
    } catch (err) {
      this.failedUntil.set(job, Date.now() + RETRY_MS);
      this.failed('scontrol', scontrol.path, err);
    }
  }

  private failed(source: 'slurmd' | 'scontrol', path: string, err: unknown): void {
    if (this.runner.isStopped) return;
    this.opts.onError?.(source);
    const message = (err as Error).message;
    if (!this.table.known) this.table = { known: false, why: `${source} (${path}) failed: ${message}` };
    this.opts.logger.warn({ path, err: message }, `GPU allocation: ${source} failed; keeping the previous table`);
  }
}
