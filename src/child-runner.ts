/**
 * Runs a helper command (squeue, rdma, scontrol) off the scrape path, bounded whatever the command
 * does: each run settles by its timeout at the latest, pipes or no pipes; it has a process group
 * of its own, killed on a timeout, on stop and when the command exits; and a process that left
 * the group (a daemon that called setsid()) but still holds the run's stdout or stderr is found
 * by that pipe in /proc/<pid>/fd and killed too. So nothing a run started outlives it, and a
 * wedged helper cannot wedge the agent.
 *
 * Every run still going is known to this module, so a second signal can end them all at once
 * (killEveryRun) before the process exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import type { Logger } from './log.js';

export interface RunLimits {
  readonly timeoutMs: number;
  /** Bytes of stdout accepted; more fails the run. */
  readonly maxOutput: number;
}

export interface RunnerOptions {
  /** Told which escaped processes were killed. */
  readonly logger?: Logger;
  /** The children's environment; the agent's own when undefined. */
  readonly env?: NodeJS.ProcessEnv;
}

export type RunFailure = 'timeout' | 'too_large' | 'exit' | 'start' | 'stopped';

export interface RunErrorDetail {
  /** The first 1000 characters the command wrote to stderr. */
  readonly stderr?: string;
  /** The start error's code (ENOENT, EACCES). */
  readonly code?: string;
  /** The exit status or the signal that ended the command. */
  readonly status?: string;
}

/** Why a run failed. */
export class RunError extends Error {
  override readonly name = 'RunError';
  constructor(
    message: string,
    readonly kind: RunFailure,
    readonly detail: RunErrorDetail = {},
  ) {
    super(message);
  }
}

/** After the command exits, how long its pipes may stay open before whoever holds them is killed. */
const LINGER_MS = 200;

/** One run in flight: its child, the inodes of its pipes and how to end it now. */
interface LiveRun {
  readonly child: ChildProcess;
  /** The command line, for the log. */
  readonly command: string;
  /** What the child's stdout and stderr link to in /proc/<pid>/fd. */
  readonly links: ReadonlySet<string>;
  /** `NAME=value` in the environment of the child and of all it starts (when the environment is known). */
  readonly marker: string | undefined;
  /** The child's start time (clock ticks since boot): what escaped it started later. */
  readonly startTicks: number;
  cut(err: RunError): void;
}

const everyRun = new Set<LiveRun>();
/** Set in each run's environment (inherited by all it starts) to this agent's pid and the run's number. */
const MARKER = 'SLURMOTEL_RUN';
let runs = 0;
let helperEnvironment: NodeJS.ProcessEnv | undefined;

/**
 * The environment helpers run with (the command's own, handed over by cli/): given it, each run's
 * environment carries a marker that finds what the run left behind even when the run had exited
 * before its pipes could be noted. Without it helpers inherit the environment unmarked.
 */
export function setHelperEnvironment(env: NodeJS.ProcessEnv): void {
  helperEnvironment = env;
}

/** Kills every run in flight of every runner, synchronously: for an exit that cannot wait. */
export function killEveryRun(): void {
  for (const run of everyRun) killRun(run);
}

export class ChildRunner {
  private readonly runs = new Set<LiveRun>();
  private stopped = false;

  /** `name` starts every error message (`squeue timed out after …`). */
  constructor(
    private readonly name: string,
    private readonly limits: RunLimits,
    private readonly opts: RunnerOptions = {},
  ) {}

  get isStopped(): boolean {
    return this.stopped;
  }

  /** Ends the runs in flight now (they reject), with everything they started, and refuses new ones. */
  stop(): void {
    this.stopped = true;
    if (this.runs.size === 0) return;
    this.opts.logger?.warn(
      { commands: [...this.runs].map((r) => r.command) },
      `${this.name} run in flight cut short by the stop`,
    );
    for (const run of [...this.runs]) run.cut(new RunError(`${this.name} stopped`, 'stopped'));
  }

  /**
   * stdout of a successful run; rejects (RunError) on a timeout, the output cap, a failed start,
   * a non-zero exit (with stderr) or stop().
   */
  run(path: string, args: readonly string[]): Promise<string> {
    if (this.stopped) return Promise.reject(new RunError(`${this.name} stopped`, 'stopped'));
    return new Promise<string>((resolve, reject) => this.start(path, args, resolve, reject));
  }

  private start(
    path: string,
    args: readonly string[],
    resolve: (out: string) => void,
    reject: (err: RunError) => void,
  ): void {
    const { name } = this;
    const { timeoutMs, maxOutput } = this.limits;
    const id = `${process.pid}.${++runs}`;
    const base = this.opts.env ?? helperEnvironment;
    const env = base === undefined ? {} : { env: { ...base, [MARKER]: id } };
    const child = spawn(path, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], ...env });
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    let failure: RunError | undefined;
    let settled = false;
    let linger: NodeJS.Timeout | undefined;
    const settle = (err: RunError | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(linger);
      this.runs.delete(run);
      everyRun.delete(run);
      if (err) reject(err);
      else resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const run: LiveRun = {
      child,
      command: [path, ...args].join(' '),
      links: stdioLinks(child.pid),
      marker: base === undefined ? undefined : `${MARKER}=${id}`,
      startTicks: startTicks(child.pid),
      cut: (err) => {
        this.reportEscaped(killRun(run));
        child.stdout?.destroy();
        child.stderr?.destroy();
        settle(failure ?? err);
      },
    };
    this.runs.add(run);
    everyRun.add(run);
    const timer = setTimeout(
      () => run.cut(new RunError(`${name} timed out after ${timeoutMs} ms`, 'timeout')),
      timeoutMs,
    );
    child.stderr?.on('data', (c: Buffer) => {
      if (stderr.length < 1000) stderr += c.toString('utf8');
    });
    child.stdout?.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxOutput) run.cut(new RunError(`${name} output exceeds ${maxOutput} bytes`, 'too_large'));
      else chunks.push(c);
    });
    child.on('error', (err: NodeJS.ErrnoException) =>
      run.cut(new RunError(`${name}: ${err.message}`, 'start', { code: err.code })),
    );
    child.on('exit', (code, signal) => {
      if (code !== 0 && !failure)
        failure = new RunError(
          `${name} exited with ${signal ?? `status ${code}`}: ${stderr.trim().slice(0, 1000)}`,
          'exit',
          { stderr, status: signal ?? String(code) },
        );
      killGroup(child);
      // The pipes close with the command unless something it started keeps them open.
      if (!settled) linger = setTimeout(() => this.reportEscaped(killPipeHolders(run)), LINGER_MS);
    });
    child.on('close', () => settle(failure));
  }

  private reportEscaped(killed: readonly Escaped[]): void {
    if (killed.length === 0) return;
    this.opts.logger?.warn(
      { processes: killed.map((k) => `${k.pid} (${k.comm})`) },
      `${this.name} left processes holding its output after leaving its process group; killed them`,
    );
  }
}

interface Escaped {
  readonly pid: number;
  readonly comm: string;
}

/** SIGKILL to the run's process group and to whatever else holds its pipes. */
function killRun(run: LiveRun): Escaped[] {
  // A command that never started (not installed) started nothing either: no scan.
  if (run.child.pid === undefined) return [];
  killGroup(run.child);
  return killPipeHolders(run);
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

/**
 * What the child's stdout and stderr link to (`socket:[N]` or `pipe:[N]`): what a process holding
 * them shows in /proc/<pid>/fd. Read at once: the child has called exec when spawn() returns and
 * cannot have been reaped yet; one that already exited shows nothing (its marker still finds what
 * it left).
 */
function stdioLinks(pid: number | undefined): Set<string> {
  const out = new Set<string>();
  if (pid === undefined) return out;
  for (const fd of [1, 2]) {
    try {
      out.add(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
    } catch {
      // exited already
    }
  }
  return out;
}

/** Field 22 of /proc/<pid>/stat; 0 when unreadable (every process is then a candidate). */
function startTicks(pid: number | undefined): number {
  if (pid === undefined) return 0;
  return statStart(pid) ?? 0;
}

function statStart(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[19]);
  } catch {
    return undefined;
  }
}

/**
 * Kills every other process holding one of the run's stdout and stderr or carrying its marker in
 * its environment: what the run started, even after a setsid(). Only processes started since the
 * run are looked at (what it left behind cannot be older), so the scan reads few fd tables.
 */
function killPipeHolders(run: LiveRun): Escaped[] {
  const killed: Escaped[] = [];
  for (const entry of listDir('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const start = statStart(pid);
    if (start === undefined || start < run.startTicks) continue;
    if (!holdsAny(pid, run.links) && !carries(pid, run.marker)) continue;
    const comm = readComm(pid);
    try {
      process.kill(pid, 'SIGKILL');
      killed.push({ pid, comm });
    } catch {
      // gone meanwhile
    }
  }
  return killed;
}

function holdsAny(pid: number, links: ReadonlySet<string>): boolean {
  if (links.size === 0) return false;
  for (const fd of listDir(`/proc/${pid}/fd`)) {
    try {
      if (links.has(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))) return true;
    } catch {
      // closed meanwhile
    }
  }
  return false;
}

function carries(pid: number, marker: string | undefined): boolean {
  if (marker === undefined) return false;
  try {
    return fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(marker);
  } catch {
    return false;
  }
}

function listDir(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

function readComm(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '?';
  }
}
