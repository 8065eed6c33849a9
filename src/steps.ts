/**
 * Work that can pause, in both agents: a long reading (a full fd rescan of thousands of processes
 * takes seconds) or a pass over 100,000 jobs (the cluster agent's checks of a response, its
 * families) is written as a generator that yields between small pieces, so the agent's event loop
 * serves scrapes, timers and signals meanwhile, and tests and `explain` run the same code straight
 * through.
 */
import { setImmediate as immediate } from 'node:timers/promises';

export type Steps<T> = Generator<Wait, T, void>;

/**
 * What a piece yields: nothing (a pause), or work done elsewhere that the next piece needs (a
 * child process's answer, bounded by its own deadline). A yielding run awaits it; a straight run
 * cannot, and reads on without it.
 */
export type Wait = void | Promise<void>;

/** How long a piece runs before it yields, at most (checked between processes and fds). */
export const SLICE_MS = 20;

/** Tells a generator when its piece has run long enough. */
export class Slice {
  private until: number;

  /** `ms` 0 yields at every check (tests make the pauses certain that way). */
  constructor(private readonly ms: number = SLICE_MS) {
    this.until = performance.now() + ms;
  }

  /** Whether to yield now; the next piece's time starts when it answers true. */
  due(): boolean {
    const now = performance.now();
    if (now < this.until) return false;
    this.until = now + this.ms;
    return true;
  }
}

/** The slice is checked every this many items by eachInSlices (a clock read for each would cost more than the item). */
const CHECK_EVERY = 256;

/** `f` of each item, in order, in pieces that yield when the slice is due. */
export function* eachInSlices<T>(items: readonly T[], f: (item: T, i: number) => void, slice: Slice): Steps<void> {
  for (let i = 0; i < items.length; i++) {
    if (i % CHECK_EVERY === CHECK_EVERY - 1 && slice.due()) yield;
    f(items[i] as T, i);
  }
}

/** The results of `f` for each item, in order, in pieces that yield when the slice is due. */
export function* mapInSlices<T, R>(items: readonly T[], f: (item: T) => R, slice: Slice): Steps<R[]> {
  const out = new Array<R>(items.length);
  yield* eachInSlices(items, (item, i) => (out[i] = f(item)), slice);
  return out;
}

/** Runs the steps straight through. */
export function runSteps<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done === true) return r.value;
  }
}

/**
 * Steps ended by a stop: an ordinary end, not a failure. Named as the platform names an abort, so
 * a schedule that knows nothing of steps tells it from an error.
 */
export class StepsStopped extends Error {
  override readonly name = 'AbortError';
  constructor() {
    super('stopped');
  }
}

/**
 * Runs the steps, giving the event loop a whole turn between pieces (loopTurn); rejects
 * (StepsStopped) once `signal` aborts.
 */
export async function runStepsYielding<T>(steps: Steps<T>, signal?: AbortSignal): Promise<T> {
  for (;;) {
    if (signal?.aborted === true) {
      steps.return(undefined as T);
      throw new StepsStopped();
    }
    const r = steps.next();
    if (r.done === true) return r.value;
    if (r.value instanceof Promise) await untilAborted(r.value, signal);
    await loopTurn();
  }
}

/**
 * A whole turn of the event loop, timers and I/O included, whichever phase this runs in. One
 * setImmediate is not: from an I/O callback (a piece that follows a child's answer or a response)
 * it runs in the same turn's check phase, before any timer or socket is seen; a second one, queued
 * from there, runs in the next turn, after both.
 */
export async function loopTurn(): Promise<void> {
  await immediate();
  await immediate();
}

/** `work`, or less once `signal` aborts (the next turn of the loop then stops the steps). */
function untilAborted(work: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return work;
  return new Promise<void>((resolve) => {
    const done = (): void => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    void work.then(done, done);
  });
}
