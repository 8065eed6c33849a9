/**
 * Runs a helper command (squeue, rdma) off the scrape path, bounded: a
 * timeout, an output cap, and a process group of its own that is killed on
 * a timeout, on stop and when the command exits, so nothing it started
 * (a wrapper's children) outlives it.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface RunLimits {
  readonly timeoutMs: number;
  /** Bytes of stdout accepted; more fails the run. */
  readonly maxOutput: number;
}

export class ChildRunner {
  private readonly children = new Set<ChildProcess>();
  private stopped = false;

  /** `name` starts every error message (`squeue timed out after …`). */
  constructor(
    private readonly name: string,
    private readonly limits: RunLimits,
  ) {}

  get isStopped(): boolean {
    return this.stopped;
  }

  /** Kills the runs in flight, with everything they started, and refuses new ones. */
  stop(): void {
    this.stopped = true;
    for (const child of this.children) killGroup(child);
  }

  /**
   * stdout of a successful run; rejects on a timeout, the output cap, a failed start or a non-zero
   * exit (with stderr).
   */
  run(path: string, args: readonly string[]): Promise<string> {
    if (this.stopped) return Promise.reject(new Error(`${this.name} stopped`));
    const { timeoutMs, maxOutput } = this.limits;
    return new Promise<string>((resolve, reject) => {
      const child = spawn(path, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      this.children.add(child);
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
      const timer = setTimeout(() => fail(new Error(`${this.name} timed out after ${timeoutMs} ms`)), timeoutMs);
      child.stdout?.on('data', (c: Buffer) => {
        size += c.length;
        if (size > maxOutput) fail(new Error(`${this.name} output exceeds ${maxOutput} bytes`));
        else chunks.push(c);
      });
      child.on('error', fail);
      child.on('exit', (code, signal) => {
        if (code !== 0 && !failure)
          failure = new Error(
            `${this.name} exited with ${signal ?? `status ${code}`}: ${stderr.trim().slice(0, 1000)}`,
          );
        killGroup(child);
      });
      child.on('close', () => {
        clearTimeout(timer);
        this.children.delete(child);
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
