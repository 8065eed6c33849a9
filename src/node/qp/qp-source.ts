/**
 * The `rdma` tool, run in the background (never on the scrape path): each
 * cycle asks for one reading (`rdma -j statistic qp show`, then `rdma -j
 * resource show qp`); the next cycle uses it. A failed run keeps the last good
 * reading. In manage mode it also turns per-PID QP counters on: only on links
 * whose mode is `qp auto off`, checked at start and whenever the set of links
 * changes; a link with bound QPs refuses (EBUSY) and is retried each cycle;
 * at stop it turns off exactly the links it turned on, and the one whose
 * turn-on the stop cut short (it was off; the set may have taken effect).
 * A stop during turn-on starts no further link.
 */
import type { Logger } from '../../log.js';
import {
  autoOff,
  counterReader,
  CounterNames,
  linkModeReader,
  MAX_READING_BYTES,
  QP_DROP_REASONS,
  resourceReader,
  type QpDropReason,
  type QpLimits,
  type QpCounter,
  type QpReading,
  type QpResource,
  type QpStreamReader,
} from './qp-parse.js';
import type { FailureKind } from '../read/result.js';
import { ChildRunner, RunError } from '../../child-runner.js';
import type { Stoppable } from '../read/squeue.js';

export type QpCountersMode = 'off' | 'observe' | 'manage';
export const QP_COUNTERS_MODES: readonly QpCountersMode[] = ['off', 'observe', 'manage'];

export interface QpSourceOptions {
  readonly path: string;
  /** Arguments before the rdma ones (a script run by an interpreter, as the demo's stand-in is). */
  readonly leadingArgs?: readonly string[];
  readonly mode: 'observe' | 'manage';
  readonly timeoutMs: number;
  readonly logger: Logger;
  /** Called for each failed run, with its kind (counted by the agent). */
  readonly onError?: (kind: FailureKind) => void;
  /** Called with what a reading left out (over a cap, unknown counter or device), by reason. */
  readonly onDropped?: (reason: QpDropReason, n: number) => void;
}

/** What a cycle needs: the latest reading, and a way to ask for the next. */
export interface QpReadings {
  latest(): QpReading | undefined;
  /** Asks for a reading; `links` (`device/port`) are the node's HCA ports. Never blocks. */
  want(links: readonly string[]): void;
}

// The runner's output cap: a longer reading fails as too_large.
const MAX_OUTPUT = MAX_READING_BYTES;
/** One `rdma statistic qp set … auto off` at stop: a stop takes at most a few seconds. */
const RESTORE_TIMEOUT_MS = 1_000;
const BUSY_RE = /busy|bound QP|EBUSY/i;
const DENIED_RE = /not permitted|EPERM|EACCES|permission denied/i;

export class QpSource implements QpReadings, Stoppable {
  private reading: QpReading | undefined;
  private seq = 0;
  private running = false;
  private readonly runner: ChildRunner;
  /** Links this process turned on: what stop turns off, with `cutShort`. */
  private readonly turnedOn = new Set<string>();
  /** A link whose turn-on a stop killed: it was off, and the set may have taken effect. */
  private cutShort: string | undefined;
  /** The background refresh in flight, awaited (bounded) by restore. */
  private refreshing: Promise<void> | undefined;
  private readonly retry = new Set<string>();
  private checkedLinks: string | undefined;
  private optionalCounters = true;
  private readonly logged = new Set<string>();
  private readonly names = new CounterNames();

  constructor(private readonly opts: QpSourceOptions) {
    this.runner = new ChildRunner(
      'rdma',
      { timeoutMs: opts.timeoutMs, maxOutput: MAX_OUTPUT },
      { logger: opts.logger },
    );
  }

  latest(): QpReading | undefined {
    return this.reading;
  }

  want(links: readonly string[]): void {
    if (this.runner.isStopped || this.running) return;
    this.running = true;
    // Started after the cycle that asked: spawning is not the cycle's cost.
    this.refreshing = new Promise((resolve) =>
      setImmediate(() => {
        void this.refresh(links).finally(() => {
          this.running = false;
          resolve();
        });
      }),
    );
  }

  /** Kills a run in flight, with everything it started, and refuses new ones. */
  stop(): void {
    this.runner.stop();
  }

  /**
   * Turns off the links this process turned on; nothing else. The links are turned off together,
   * each call bounded by RESTORE_TIMEOUT_MS, so a hanging rdma cannot hold up a stop; what could
   * not be turned off is logged by name.
   */
  async restore(): Promise<void> {
    // A turn-on the stop killed settles first, so what it did is known (bounded: its run is killed).
    if (this.refreshing && this.runner.isStopped) await settledWithin(this.refreshing, RESTORE_TIMEOUT_MS);
    const links = this.leftOn();
    if (links.length === 0) return;
    const runner = new ChildRunner(
      'rdma',
      { timeoutMs: Math.min(RESTORE_TIMEOUT_MS, this.opts.timeoutMs), maxOutput: MAX_OUTPUT },
      { logger: this.opts.logger },
    );
    const results = await Promise.allSettled(links.map((link) => this.turnOff(runner, link)));
    runner.stop();
    const left = links.filter((_, i) => results[i]?.status === 'rejected');
    if (left.length > 0)
      this.opts.logger.warn({ links: left }, 'per-PID QP counters left on where this agent turned them on');
  }

  /**
   * For an exit that cannot wait (a second signal, restores perhaps in flight): names at ERROR every
   * link still on that this agent turned on, or whose turn-on was cut short, with the command that
   * turns each off, since nothing will after this process. Synchronous: the process exits next.
   */
  exitingNow(): void {
    const links = this.leftOn();
    if (links.length === 0) return;
    this.opts.logger.error(
      { links, commands: links.map((link) => this.command(['statistic', 'qp', 'set', 'link', link, 'auto', 'off'])) },
      'exiting without turning per-PID QP counters off again where this agent turned them on: run these commands to turn them off',
    );
  }

  /** Links this agent changed and has not set back yet: those it turned on, and the one whose turn-on was cut short. */
  private leftOn(): string[] {
    const cut = this.cutShort;
    return [...this.turnedOn, ...(cut === undefined || this.turnedOn.has(cut) ? [] : [cut])].sort();
  }

  /** A run of the tool as a shell command line, each word quoted where the shell would read it otherwise. */
  private command(args: readonly string[]): string {
    return [this.opts.path, ...this.argv(args)].map(shellWord).join(' ');
  }

  private async turnOff(runner: ChildRunner, link: string): Promise<void> {
    try {
      await runner.run(this.opts.path, this.argv(['statistic', 'qp', 'set', 'link', link, 'auto', 'off']));
      const had = this.turnedOn.delete(link);
      if (had) this.opts.logger.info({ link }, 'per-PID QP counters turned off again (this agent turned them on)');
      else this.opts.logger.info({ link }, 'per-PID QP counters set back to off (the stop cut their turn-on short)');
      if (this.cutShort === link) this.cutShort = undefined;
    } catch (err) {
      this.opts.logger.warn({ link, err: (err as Error).message }, 'could not turn per-PID QP counters off again');
      throw err;
    }
  }

  private async refresh(links: readonly string[]): Promise<void> {
    const limits: QpLimits = { names: this.names, links: new Set(links) };
    if (this.opts.mode === 'manage') await this.manage(links, limits);
    const counters = await this.json(['-j', 'statistic', 'qp', 'show'], counterReader(limits));
    if (counters === undefined) return;
    const qps = await this.json(['-j', 'resource', 'show', 'qp'], resourceReader(limits));
    this.reading = { seq: ++this.seq, counters, ...(qps ? { qps } : {}) };
    if (qps) await this.sayUncounted(counters, qps, limits);
  }

  /**
   * Links where processes hold QPs and the kernel counts none of them: their per-job QP series are
   * unavailable (exported as nothing, never as zeros), and the log says why, once per link, with
   * the link's mode (read then) telling a mode left off from a driver that binds no QP to a counter.
   */
  private async sayUncounted(
    counters: readonly QpCounter[],
    qps: readonly QpResource[],
    limits: QpLimits,
  ): Promise<void> {
    const counted = new Set(counters.map((c) => `${c.device}/${c.port}`));
    for (const link of counted) this.logged.delete(`uncounted ${link}`);
    const held = new Set(qps.filter((q) => q.pid !== undefined).map((q) => `${q.device}/${q.port}`));
    const fresh = [...held].filter((l) => !counted.has(l) && !this.logged.has(`uncounted ${l}`)).sort();
    if (fresh.length === 0) return;
    const modes = await this.json(['-j', 'statistic', 'qp', 'mode'], linkModeReader(limits));
    for (const link of fresh) {
      const mode = modes?.find((m) => `${m.device}/${m.port}` === link)?.mode;
      this.once(`uncounted ${link}`, { link, mode: mode ?? 'unknown' }, uncountedWhy(link, mode));
    }
  }

  private async manage(links: readonly string[], limits: QpLimits): Promise<void> {
    const key = [...links].sort().join(' ');
    if (key === this.checkedLinks && this.retry.size === 0) return;
    const modes = await this.json(['-j', 'statistic', 'qp', 'mode'], linkModeReader(limits));
    if (modes === undefined) return;
    this.checkedLinks = key;
    this.retry.clear();
    for (const m of modes) {
      if (this.runner.isStopped) return;
      if (autoOff(m.mode)) await this.turnOn(`${m.device}/${m.port}`);
    }
  }

  private async turnOn(link: string): Promise<void> {
    const base = ['statistic', 'qp', 'set', 'link', link, 'auto', 'type,pid', 'on'];
    this.cutShort = link;
    try {
      if (this.optionalCounters) await this.setWithOptional(base);
      else await this.runner.run(this.opts.path, this.argv(base));
      this.turnedOn.add(link);
      this.cutShort = undefined;
      this.opts.logger.info(
        { link, optionalCounters: this.optionalCounters },
        'per-PID QP counters turned on (auto type,pid)',
      );
    } catch (err) {
      // Cut short by a stop, the set may have taken effect: the restore sets the link off again.
      if (this.runner.isStopped) return;
      this.cutShort = undefined;
      this.refused(link, (err as Error).message);
    }
  }

  /** With optional counters (per-QP bytes) where the tool and kernel take them; else without. */
  private async setWithOptional(base: readonly string[]): Promise<void> {
    try {
      await this.runner.run(this.opts.path, this.argv([...base, 'optional-counters', 'on']));
    } catch (err) {
      const message = (err as Error).message;
      if (BUSY_RE.test(message) || DENIED_RE.test(message) || this.runner.isStopped) throw err;
      await this.runner.run(this.opts.path, this.argv(base));
      this.optionalCounters = false;
    }
  }

  /** EBUSY (bound QPs) is retried each cycle; a missing privilege is not. Each is logged once per link. */
  private refused(link: string, message: string): void {
    this.opts.onError?.(DENIED_RE.test(message) ? 'denied' : 'io');
    if (BUSY_RE.test(message)) {
      this.retry.add(link);
      this.once(
        `busy ${link}`,
        { link, err: message },
        'per-PID QP counters cannot be turned on while QPs are bound on the link; retrying each cycle',
      );
    } else if (DENIED_RE.test(message)) {
      this.once(
        `denied ${link}`,
        { link, err: message },
        'turning per-PID QP counters on needs CAP_NET_ADMIN; --qp-counters observe reads them without',
      );
    } else {
      this.retry.add(link);
      this.once(`failed ${link}`, { link, err: message }, 'turning per-PID QP counters on failed; retrying each cycle');
    }
  }

  /**
   * Runs the tool, its JSON read as it arrives (nothing of the output kept but what the reader
   * keeps); undefined when either failed.
   */
  private async json<T>(args: readonly string[], reader: QpStreamReader<T>): Promise<T[] | undefined> {
    try {
      await this.runner.runStreaming(this.opts.path, this.argv(args), (chunk) => reader.push(chunk));
    } catch (err) {
      if (this.runner.isStopped) return undefined;
      const message = (err as Error).message;
      const tooLarge = err instanceof RunError && err.kind === 'too_large';
      return this.failed(args, tooLarge ? 'too_large' : 'io', message);
    }
    const parsed = reader.end();
    if (!parsed.ok) return this.failed(args, parsed.kind, parsed.detail);
    for (const reason of QP_DROP_REASONS) {
      const n = parsed.value.dropped[reason];
      if (n > 0) this.opts.onDropped?.(reason, n);
    }
    if (parsed.value.malformed !== undefined)
      this.once(
        `values ${args.join(' ')}`,
        {
          path: this.opts.path,
          args: args.join(' '),
          count: parsed.value.dropped.values,
          example: parsed.value.malformed,
        },
        'rdma gave counter values no 64-bit counter holds: those counters are left out of the reading (logged once; counted in ib_slurm_exporter_qp_reading_dropped_total{reason="values"})',
      );
    return parsed.value.items;
  }

  private failed(args: readonly string[], kind: FailureKind, message: string): undefined {
    this.opts.onError?.(kind);
    this.once(
      `run ${args.join(' ')}`,
      { path: this.opts.path, args: args.join(' '), err: message },
      'rdma run failed; keeping the last reading (logged once per command)',
    );
    return undefined;
  }

  private argv(args: readonly string[]): string[] {
    return [...(this.opts.leadingArgs ?? []), ...args];
  }

  private once(key: string, fields: object, msg: string): void {
    if (this.logged.has(key)) return;
    this.logged.add(key);
    this.opts.logger.warn(fields, msg);
  }
}

/** Why a link's processes have QPs but no per-PID counter, from the link's mode. */
export function uncountedWhy(link: string, mode: string | undefined): string {
  const unavailable = `per-job QP counters unavailable on ${link}: processes hold QPs there and none is on a per-PID counter`;
  if (mode === undefined) return `${unavailable} (the link's mode could not be read)`;
  if (autoOff(mode))
    return `${unavailable}: its mode is '${mode}'; turn it on (rdma statistic qp set link ${link} auto type,pid on) or run with --qp-counters manage`;
  return `${unavailable} although its mode is '${mode}': QPs created before the mode was on are never counted, and some drivers bind no QP to a counter at all (Soft-RoCE rxe; mlx5 DEVX QPs)`;
}

/** A word as the shell reads it back: bare when it holds nothing the shell would act on, else single-quoted. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** Waits for `p` to settle, at most `ms`. */
async function settledWithin(p: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  await Promise.race([p, late]);
  clearTimeout(timer);
}
