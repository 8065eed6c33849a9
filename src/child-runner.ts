/**
 * Runs a helper command (squeue, rdma, scontrol) off the scrape path, bounded whatever the command
 * does: each run settles by its timeout at the latest, pipes or no pipes; it has a process group
 * of its own, killed on a timeout, on stop and when the command exits; and a process that left
 * the group (a daemon that called setsid()) but still holds the run's stdout or stderr is found
 * by that pipe in /proc/<pid>/fd and killed too, and so, when the run ends, is one that carries
 * the run's marker in its environment (a daemon that forked twice and closed its output). So
 * nothing a run started outlives it, and a wedged helper cannot wedge the agent.
 *
 * A group is signalled only while it is still the run's: its leader alive with the start time it
 * had, or (the leader reaped) members started since. Once the group is empty its number may be
 * another process's, and a kill by number would hit that one.
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
  /** After the command exits, how long its pipes may stay open before whoever holds them is killed. */
  readonly lingerMs?: number;
}

export interface RunnerOptions {
  /** Told which escaped processes were killed. */
  readonly logger?: Logger;
  /** The children's environment; the agent's own when undefined. */
  readonly env?: NodeJS.ProcessEnv;
}

/** `consumer`: the consumer of a streamed run's output threw (the run is cut). */
export type RunFailure = 'timeout' | 'too_large' | 'exit' | 'start' | 'stopped' | 'consumer';

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
/** Scans for what a run left, repeated while one kills something (a process may fork as it dies). */
const MAX_SCANS = 8;

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
  async run(path: string, args: readonly string[]): Promise<string> {
    const chunks: Buffer[] = [];
    await this.runStreaming(path, args, (c) => chunks.push(c));
    return Buffer.concat(chunks).toString('utf8');
  }

  /**
   * The run's stdout handed to `onChunk` as it arrives, none of it kept here, under the same
   * bounds as run(): resolves when the run succeeded, rejects (RunError) as run() does, and also
   * when `onChunk` throws (`consumer`, the run cut). Chunks split anywhere, UTF-8 sequences too.
   */
  runStreaming(path: string, args: readonly string[], onChunk: (chunk: Buffer) => void): Promise<void> {
    if (this.stopped) return Promise.reject(new RunError(`${this.name} stopped`, 'stopped'));
    return new Promise<void>((resolve, reject) => this.start(path, args, onChunk, resolve, reject));
  }

  private start(
    path: string,
    args: readonly string[],
    onChunk: (chunk: Buffer) => void,
    resolve: () => void,
    reject: (err: RunError) => void,
  ): void {
    const { name } = this;
    const { timeoutMs, maxOutput } = this.limits;
    const id = `${process.pid}.${++runs}`;
    const base = this.opts.env ?? helperEnvironment;
    const env = base === undefined ? {} : { env: { ...base, [MARKER]: id } };
    const child = spawn(path, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], ...env });
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
      // A daemon that closed the run's pipes is known by the marker alone.
      if (run.marker !== undefined) this.reportEscaped(killPipeHolders(run));
      if (err) reject(err);
      else resolve();
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
    const consume = (c: Buffer): void => {
      try {
        onChunk(c);
      } catch (err) {
        run.cut(new RunError(`${name} output could not be read: ${(err as Error).message}`, 'consumer'));
      }
    };
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
      else if (!settled) consume(c);
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
      killGroup(run);
      // The pipes close with the command unless something it started keeps them open.
      if (!settled)
        linger = setTimeout(() => this.reportEscaped(killPipeHolders(run)), this.limits.lingerMs ?? LINGER_MS);
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
  killGroup(run);
  return killPipeHolders(run);
}

/** SIGKILL to the child's process group while it is still the run's; a group already gone is fine. */
function killGroup(run: LiveRun): void {
  const pgid = run.child.pid;
  if (pgid === undefined || !groupIsTheRuns(pgid, run.startTicks)) return;
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // ESRCH: every member has exited already.
  }
}

/**
 * Whether group `pgid` is still the one the run's child leads: the leader is there with its start
 * time (alive or not yet reaped), or it is gone and a process started since is in the group (the
 * kernel gives no process a number still in use as a group id). A process with that number and
 * another start time means the group emptied and the number went to someone else.
 */
function groupIsTheRuns(pgid: number, startTicks: number): boolean {
  const leader = readStat(pgid);
  if (leader) return leader.start === startTicks;
  return pidsSince(pgid).some((pid) => {
    const s = readStat(pid);
    return s !== undefined && s.pgid === pgid && s.start >= startTicks;
  });
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
  return readStat(pid)?.start ?? 0;
}

/** A process's group (field 5 of /proc/<pid>/stat) and start time (field 22, clock ticks since boot). */
function readStat(pid: number): { readonly pgid: number; readonly start: number } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pgid: Number(fields[2]), start: Number(fields[19]) };
  } catch {
    return undefined;
  }
}

/**
 * PIDs that may have been given out since `first` was: the kernel hands PIDs out in increasing
 * order, wrapping at pid_max, so they lie between `first` and the last one given (ns_last_pid).
 * Every PID when that cannot be read. (Should the counter wrap all the way past `first` within
 * one run, some are missed: what a run left is then not found, and nothing else is killed.)
 */
function pidsSince(first: number): number[] {
  const all = listDir('/proc')
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && pid > 0);
  let last: number;
  try {
    last = Number(fs.readFileSync('/proc/sys/kernel/ns_last_pid', 'latin1').trim());
  } catch {
    return all;
  }
  if (!Number.isInteger(last) || last <= 0) return all;
  return all.filter((pid) => (last >= first ? pid >= first && pid <= last : pid >= first || pid <= last));
}

/**
 * Kills every other process holding one of the run's stdout and stderr or carrying its marker in
 * its environment: what the run started, even after a setsid() or a second fork. Only processes
 * started since the run are looked at (what it left behind cannot be older), so the scan reads
 * few files. Scanned again while a scan kills something: a process killed may have forked after
 * the list of processes was read.
 */
function killPipeHolders(run: LiveRun): Escaped[] {
  const killed: Escaped[] = [];
  const first = run.child.pid;
  if (first === undefined) return killed;
  for (let scan = 0; scan < MAX_SCANS; scan++) {
    const before = killed.length;
    for (const pid of pidsSince(first)) {
      if (pid === process.pid || killed.some((k) => k.pid === pid)) continue;
      const start = readStat(pid)?.start;
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
    if (killed.length === before) break;
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

/**
 * Whether the process's environment has the run's marker. Only processes of the agent's own user
 * are read: what a helper starts runs as the agent does, and reading another user's environ waits
 * on that process's memory map, which its owner can hold locked (a thread stuck in a page fault
 * on a hung filesystem while another asks to map memory) for as long as they like.
 */
function carries(pid: number, marker: string | undefined): boolean {
  if (marker === undefined) return false;
  try {
    if (fs.statSync(`/proc/${pid}`).uid !== process.geteuid?.()) return false;
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
