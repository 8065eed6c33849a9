/**
 * Event-loop delay since the last read, for the self-monitoring endpoint.
 *
 * Node's monitorEventLoopDelay loses a stall when it is reset between the stall's end and its
 * timer's next tick (reset forgets the previous tick, so the late tick records nothing): a scrape
 * served right after a stall, before that tick, would never show it. This measures the same way
 * (a timer every `resolutionMs`; a late tick records its lateness) and, at a read, first records
 * the lateness still pending, so every stalled instant falls in exactly one window.
 */
import { createHistogram, performance, type RecordableHistogram } from 'node:perf_hooks';

export interface LoopDelayWindow {
  readonly p99Seconds: number;
  readonly maxSeconds: number;
}

export interface LoopDelayOptions {
  readonly resolutionMs?: number;
  /** Milliseconds, monotonic (default performance.now). */
  readonly now?: () => number;
  /** Calls `tick` every `ms` until the returned function is called (default: an unref'd interval). */
  readonly every?: (tick: () => void, ms: number) => () => void;
}

export class LoopDelay {
  private readonly histogram: RecordableHistogram = createHistogram();
  private readonly resolutionMs: number;
  private readonly now: () => number;
  private readonly cancel: () => void;
  private last: number;

  constructor(opts: LoopDelayOptions = {}) {
    this.resolutionMs = opts.resolutionMs ?? 10;
    this.now = opts.now ?? (() => performance.now());
    this.last = this.now();
    this.cancel = (opts.every ?? unrefInterval)(() => this.recordUntil(this.now()), this.resolutionMs);
  }

  /** p99 and maximum delay since the previous read, in seconds; then a new window starts. */
  read(): LoopDelayWindow {
    this.recordUntil(this.now());
    const window = { p99Seconds: this.histogram.percentile(99) / 1e9, maxSeconds: this.histogram.max / 1e9 };
    this.histogram.reset();
    return window;
  }

  stop(): void {
    this.cancel();
  }

  /** How late the loop is at `t` beyond one resolution since the last tick or read (at least 1 ns). */
  private recordUntil(t: number): void {
    const lateMs = t - this.last - this.resolutionMs;
    this.histogram.record(Math.max(1, Math.round(lateMs * 1e6)));
    this.last = t;
  }
}

function unrefInterval(tick: () => void, ms: number): () => void {
  const timer = setInterval(tick, ms).unref();
  return () => clearInterval(timer);
}
