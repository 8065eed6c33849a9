/**
 * Background reader of Slurm's GPU allocation on this node (the rule and its measurements:
 * gres.ts, docs/node-agent.md "GPUs"): `slurmd -G` gives the node's GPU device files in GRES index
 * order, re-read rarely (it changes when slurmd is reconfigured); `squeue --json` gives each job's
 * GRES indices, re-read at most once per interval while the node has GPUs. Never on the scrape
 * path; a failed run keeps the last table, is counted and logged.
 */
import fs from 'node:fs';
import type { Logger } from '../../log.js';
import { ChildRunner } from '../../child-runner.js';
import { deviceNumber } from './roots.js';
import { parseSlurmdGpuFiles, parseSqueueGpuIndices } from './gres.js';

export interface GpuAllocationOptions {
  readonly slurmdPath: string;
  readonly squeuePath: string;
  readonly nodeName: string;
  /** squeue at most this often. */
  readonly minIntervalMs: number;
  /** slurmd -G at most this often (also again after it failed, at the squeue pace). */
  readonly mapIntervalMs: number;
  readonly timeoutMs: number;
  readonly logger: Logger;
  readonly onError?: (source: 'slurmd' | 'squeue') => void;
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
  /** Asks for a refresh; never blocks. */
  want(): void;
  /** Refreshes now and settles when done (explain, tests). */
  refresh(): Promise<void>;
  stop(): void;
}

const MAX_OUTPUT = 64 << 20;

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

  want(): void {
    if (this.runner.isStopped || this.running || Date.now() - this.lastRunMs < this.opts.minIntervalMs) return;
    void this.refresh();
  }

  refresh(): Promise<void> {
    this.running ??= this.run().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  stop(): void {
    this.runner.stop();
  }

  private async run(): Promise<void> {
    this.lastRunMs = Date.now();
    if (this.files === undefined || Date.now() - this.lastMapMs >= this.opts.mapIntervalMs) await this.readMap();
    if (this.files === undefined) return;
    await this.readJobs(this.files);
  }

  /** slurmd -G writes its GRES lines to stderr: the shell folds them into the stdout the runner reads. */
  private async readMap(): Promise<void> {
    const { slurmdPath, nodeName, logger } = this.opts;
    try {
      const out = await this.runner.run('/bin/sh', ['-c', 'exec "$0" -G -N "$1" 2>&1', slurmdPath, nodeName]);
      const parsed = parseSlurmdGpuFiles(out);
      if ('why' in parsed) throw new Error(parsed.why);
      this.files = parsed.files.map((path) => {
        const device = this.deviceOf(path);
        return device === undefined ? { path } : { path, device };
      });
      this.lastMapMs = Date.now();
      logger.debug({ files: this.files }, 'slurmd -G: GPU GRES files read');
    } catch (err) {
      this.failed('slurmd', slurmdPath, err);
    }
  }

  private async readJobs(files: readonly { path: string; device?: string }[]): Promise<void> {
    const { squeuePath, nodeName, logger } = this.opts;
    try {
      const out = await this.runner.run(squeuePath, ['--json', `--nodelist=${nodeName}`]);
      const jobs = new Map<string, string[]>();
      for (const [job, indices] of parseSqueueGpuIndices(out, nodeName)) {
        const devices = indices.map((i) => files[i]?.device);
        // An index beyond slurmd's list or a File= that is no device: this job's allocation is unknown.
        if (devices.every((d): d is string => d !== undefined)) jobs.set(job, devices);
        else logger.warn({ job, indices, files }, 'GPU GRES index without a device on this node; allocation unknown');
      }
      this.table = { known: true, jobs, files };
      logger.debug({ jobs: jobs.size }, 'GPU allocation table refreshed');
    } catch (err) {
      this.failed('squeue', squeuePath, err);
    }
  }

  private failed(source: 'slurmd' | 'squeue', path: string, err: unknown): void {
    if (this.runner.isStopped) return;
    this.opts.onError?.(source);
    const message = (err as Error).message;
    if (!this.table.known) this.table = { known: false, why: `${source} (${path}) failed: ${message}` };
    this.opts.logger.warn({ path, err: message }, `GPU allocation: ${source} failed; keeping the previous table`);
  }
}
