/**
 * Asks the device number of an fd whose filesystem the agent will not ask itself.
 *
 * A stat of `/proc/<pid>/fd/<N>` runs the getattr of the filesystem the file lives on, and on a
 * network, FUSE or stacked filesystem (overlay asks the layer below, which may be any of these)
 * that can wait forever: a server that is down, a user's own FUSE daemon that never answers. A
 * task waiting there cannot even be killed until the filesystem answers. So the agent never makes
 * that call itself: for the few fds that matter (named like a device, on a mount that allows
 * devices: fd-mounts.ts) it runs `stat` in a child process of its own, a few at once, each bounded
 * by a deadline. A child that misses it is killed and abandoned (it may stay stuck until the
 * filesystem answers; the agent neither waits for it nor counts on its exit), its mount is not
 * asked again while it is mounted, and the fd stays `uncertain`. Answers are kept per process (pid
 * and start time) and file (its mount and path), so a steady process is asked once, and its fds
 * on one file once in all.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { FdKind } from './fd-mounts.js';

/** What one probe came to. */
export type ProbeResult = 'device' | 'other' | 'failed' | 'timeout' | 'skipped';

export interface FdProbeOptions {
  /** The stat command (coreutils), resolved through PATH when not absolute. */
  readonly statPath?: string;
  /** How long one stat may take before it is abandoned. */
  readonly timeoutMs?: number;
  /** Questions asked per cycle at most; the rest wait for the next cycle (and are uncertain meanwhile). */
  readonly maxPerCycle?: number;
  /** Children running at once. */
  readonly concurrency?: number;
  /** Abandoned children still stuck at most: past it nothing is asked until one ends. */
  readonly maxStuck?: number;
}

interface Question {
  readonly key: string;
  readonly path: string;
  readonly mount: string;
}

const DEFAULTS = { statPath: 'stat', timeoutMs: 2_000, maxPerCycle: 32, concurrency: 4, maxStuck: 8 };
const MAX_HUNG_MOUNTS = 1024;
/**
 * Answers kept at most. Only questions asked are answered and kept, a cycle's share at a time, each
 * while its process lives: a user's million fds on one file named like a device cost a cycle's
 * share of stats, and past this bound none.
 */
export const MAX_ANSWERS = 16_384;

export class FdProbe {
  private readonly opts: typeof DEFAULTS;
  private readonly answers = new Map<string, FdKind>();
  /** Answers that are uncertain: asked again at the next full rescan. */
  private readonly retry = new Set<string>();
  private queue: Question[] = [];
  private readonly queued = new Set<string>();
  private readonly inFlight = new Set<string>();
  /** Mounts a stat hung on: not asked again while they are mounted (their key names the mount). */
  private readonly hungMounts = new Set<string>();
  private readonly live = new Set<ChildProcess>();
  private stuck = 0;
  private stopped = false;
  /** Results since the last take(). */
  private counts = new Map<ProbeResult, number>();

  constructor(opts: FdProbeOptions = {}) {
    this.opts = { ...DEFAULTS, ...opts };
  }

  /**
   * What is known of the file `key` (`pid start mount link`): its answer, `uncertain` while it is being
   * asked, undefined when never asked.
   */
  answer(key: string): FdKind | undefined {
    if (this.inFlight.has(key)) return { uncertain: 'being asked (a stat in a child process)' };
    return this.answers.get(key);
  }

  /**
   * Queues a question for the next settle; `mount` names its mount (id and device), so a hung one is
   * not asked again. Undefined while there is no answer yet: being asked, queued, or past the
   * cycle's share (asked in a later cycle; nothing of it is kept meanwhile). A question that will
   * not be asked (its mount hung before, or the kept answers are full) is answered at once, and
   * nothing of it is kept either.
   */
  ask(key: string, path: string, mount: string): FdKind | undefined {
    if (this.inFlight.has(key) || this.queued.has(key)) return undefined;
    const never = this.whyNotAsked(mount);
    if (never !== undefined || this.queue.length >= this.opts.maxPerCycle) {
      this.count('skipped');
      return never === undefined ? undefined : { uncertain: never };
    }
    this.queued.add(key);
    this.queue.push({ key, path, mount });
    return undefined;
  }

  /** Why a question on `mount` would not be asked at all now; undefined when it would. */
  private whyNotAsked(mount: string): string | undefined {
    if (this.hungMounts.has(mount)) return 'a stat on its mount hung before';
    if (this.answers.size + this.queue.length >= MAX_ANSWERS) return `not asked: ${MAX_ANSWERS} answers kept already`;
    return undefined;
  }

  get hasQuestions(): boolean {
    return this.queue.length > 0;
  }

  /**
   * Asks the queued questions (up to the cycle's share), a few at a time; settles once each has an
   * answer or was abandoned. Never rejects.
   */
  async settle(): Promise<void> {
    const now = this.queue;
    this.queue = [];
    this.queued.clear();
    for (const q of now) this.inFlight.add(q.key);
    const next = (): Promise<void> => {
      const q = now.shift();
      return q === undefined ? Promise.resolve() : this.probe(q).then(next);
    };
    await Promise.all(Array.from({ length: Math.min(this.opts.concurrency, now.length) }, next));
  }

  /**
   * Before a full rescan: forgets the uncertain answers, so that a filesystem that answers again
   * is asked again within it (the scanner keeps the processes they left unreadable until then).
   */
  beginFullScan(): void {
    for (const key of this.retry) this.answers.delete(key);
    this.retry.clear();
  }

  /** After a scan: forgets the answers of processes no longer present (their keys start with the pid). */
  endScan(present: ReadonlySet<number>): void {
    for (const key of this.answers.keys())
      if (!present.has(Number(key.slice(0, key.indexOf(' '))))) {
        this.answers.delete(key);
        this.retry.delete(key);
      }
  }

  /** Results since the last call, by kind. */
  take(): ReadonlyMap<ProbeResult, number> {
    const out = this.counts;
    this.counts = new Map();
    return out;
  }

  /** Kills the children in flight and asks nothing more. */
  stop(): void {
    this.stopped = true;
    for (const c of this.live) killGroup(c);
  }

  private probe(q: Question): Promise<void> {
    if (this.stopped || this.stuck >= this.opts.maxStuck) {
      const why = this.stopped ? 'the agent is stopping' : `${this.stuck} earlier stats are still stuck`;
      this.settleOne(q.key, { uncertain: `not asked: ${why}` }, 'skipped');
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      // Numbers only (raw mode, major and minor in hex): %F's words are translated by the locale.
      const child = spawn(this.opts.statPath, ['-L', '--printf', '%f %t %T\\n', '--', q.path], {
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        // Asked while a scan may be reading from within a job's directory (working-dir.ts).
        cwd: '/',
      });
      this.live.add(child);
      let out = '';
      let err = '';
      child.stdout?.on('data', (d: Buffer) => (out += d.toString('latin1')));
      child.stderr?.on('data', (d: Buffer) => (err += d.toString('utf8')));
      let done = false;
      const finish = (kind: FdKind, result: ProbeResult): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.settleOne(q.key, kind, result);
        resolve();
      };
      const timer = setTimeout(() => {
        // Killed and left: a task stuck in a getattr ends only when the filesystem answers.
        const running = child.exitCode === null && child.signalCode === null;
        if (running) this.stuck++;
        // Kept while the agent runs (a mount id and device pair is reused only after an unmount),
        // the oldest forgotten past a bound.
        this.hungMounts.add(q.mount);
        if (this.hungMounts.size > MAX_HUNG_MOUNTS)
          this.hungMounts.delete(this.hungMounts.values().next().value as string);
        if (running) child.once('exit', () => this.stuck--);
        killGroup(child);
        child.stdout?.destroy();
        child.stderr?.destroy();
        child.unref();
        finish({ uncertain: `a stat did not answer within ${this.opts.timeoutMs} ms` }, 'timeout');
      }, this.opts.timeoutMs);
      child.on('error', (e) => finish({ uncertain: `stat could not run: ${e.message}` }, 'failed'));
      child.on('close', (code) => {
        this.live.delete(child);
        if (code === 0) finish(...parseStat(out));
        else finish({ uncertain: `stat failed: ${lastLine(err)}` }, 'failed');
      });
    });
  }

  private settleOne(key: string, kind: FdKind, result: ProbeResult): void {
    this.inFlight.delete(key);
    this.answers.set(key, kind);
    if ('uncertain' in kind) this.retry.add(key);
    this.count(result);
  }

  private count(result: ProbeResult): void {
    this.counts.set(result, (this.counts.get(result) ?? 0) + 1);
  }
}

const S_IFMT = 0o170000;
const S_IFCHR = 0o020000;

/** `<raw mode> <major> <minor>` (hex, as stat prints `%f %t %T`) → the device, or none for any other type. */
export function parseStat(out: string): [FdKind, ProbeResult] {
  const m = /^([0-9a-f]{1,8}) ([0-9a-f]{1,8}) ([0-9a-f]{1,8})\n?$/.exec(out);
  if (m === null) return [{ uncertain: `stat printed ${JSON.stringify(out.slice(0, 80))}` }, 'failed'];
  const [mode, major, minor] = [m[1], m[2], m[3]].map((h) => parseInt(h as string, 16)) as [number, number, number];
  if ((mode & S_IFMT) !== S_IFCHR) return [{ none: true }, 'other'];
  return [{ dev: `${major}:${minor}` }, 'device'];
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return (lines[lines.length - 1] ?? '').slice(0, 200) || 'no message';
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // gone meanwhile
  }
}
