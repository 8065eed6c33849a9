/** Figures the benchmarks share. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { NODE_AGENT_V8_FLAGS, setV8Flags } from '../src/cli/v8-tuning.js';
import { loadFdReader, type FdReader } from '../src/node/read/fd-native.js';
import { WorkingDir } from '../src/node/read/working-dir.js';
import { V8_FLAGS } from '../scripts/sea/v8-flags.js';

/** The middle value (the mean of the two middle ones for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/**
 * The line a bench prints first: the Node it runs on (an in-process bench measures the Node that
 * runs it; run it under another, e.g. the executable's 24.22.3 from scripts/node-lines.sh's
 * cache, to measure that one).
 */
export function sayRuntime(): void {
  console.log(`runtime: Node ${process.version} (${process.execPath})`);
}

/**
 * A node agent bench runs as the single executable runs the agent, and says how: under the
 * executable's own V8 flags (scripts/sea/v8-flags.ts: heap sizes, which V8 takes only at start, so
 * the bench runs itself again with them and exits with that run's status) and the flags the node
 * agent then sets on itself. `--without-executable-v8-flags` runs as an npm install does (no flags
 * at start); `--without-agent-v8-flags` leaves the agent's own unset, to weigh them. Call it first,
 * before the bench makes anything.
 */
export function asNodeAgent(): void {
  const atStart = process.argv.includes('--without-executable-v8-flags') ? [] : V8_FLAGS;
  if (!atStart.every((f) => process.execArgv.includes(f))) {
    const [script, ...args] = process.argv.slice(1);
    const run = spawnSync(process.execPath, [...process.execArgv, ...atStart, script as string, ...args], {
      stdio: 'inherit',
    });
    process.exit(run.status ?? 1);
  }
  const flags = process.argv.includes('--without-agent-v8-flags') ? [] : setV8Flags(NODE_AGENT_V8_FLAGS);
  console.log(
    `V8 flags at start, as the executable's: ${atStart.join(' ') || 'none (--without-executable-v8-flags)'}; ` +
      `set by the node agent: ${flags.join(' ') || 'none (--without-agent-v8-flags)'}`,
  );
}

/**
 * The fd reader a node bench's collectors read with, as the agent's `--fd-reader`: the native one
 * where it loads (else Node's fs, and the line printed says why), or Node's fs with `--fd-reader fs`.
 */
export function benchFdReader(): FdReader | undefined {
  const at = process.argv.indexOf('--fd-reader');
  if (at >= 0 && process.argv[at + 1] === 'fs') {
    console.log("fd reader: Node's fs (--fd-reader fs)");
    return undefined;
  }
  const load = loadFdReader();
  console.log(load.reader ? 'fd reader: native' : `fd reader: Node's fs (the native one did not load: ${load.why})`);
  return load.reader;
}

/** The rounds' own ratios (second / first of one round): how far one run's ratio can be trusted. */
export interface RoundRatios {
  readonly median: number;
  readonly low: number;
  readonly high: number;
}

/**
 * Medians of two measurements taken in turn, `runs` times each (`i` counts the rounds from 0), so
 * that a change of the machine's load weighs on both alike. Each returns its milliseconds (time()).
 * Third: the spread of each round's own ratio, which a shared machine's drifting speed widens.
 */
export function alternated(
  runs: number,
  first: (i: number) => number,
  second: (i: number) => number,
): [first: number, second: number, rounds: RoundRatios] {
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < runs; i++) {
    a.push(first(i));
    b.push(second(i));
  }
  const ratios = b.map((x, i) => x / (a[i] as number)).sort((x, y) => x - y);
  const at = (q: number): number => ratios[Math.min(ratios.length - 1, Math.floor(q * ratios.length))] as number;
  return [median(a), median(b), { median: median(ratios), low: at(0.25), high: at(0.75) }];
}

/**
 * A ratio of medians as the node benches print it, with the rounds' own: their median can differ
 * from it (and lie outside their middle half) when the machine's speed drifts during the run.
 */
export function ratioText(of: number, to: number, rounds: RoundRatios): string {
  const r = (x: number): string => x.toFixed(2);
  return `ratio ${r(of / to)}×  (rounds: median ${r(rounds.median)}×, middle half ${r(rounds.low)}–${r(rounds.high)}×)`;
}

/** Milliseconds `fn` takes. */
export function time(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

/**
 * The fd scan's floor: every `<procfs>/<pid>/fd` listed, nothing read. Named from within procfs
 * (`<pid>/fd`), as the scan names them (src/node/read/working-dir.ts): the floor is the cheapest
 * listing, not one the scan can beat by the way it names the directories.
 */
export function listingFloor(procfs: string): void {
  const wd = new WorkingDir();
  const from = wd.enter(procfs) ? '' : `${procfs}/`;
  try {
    for (const name of fs.readdirSync(procfs)) {
      const c = name.charCodeAt(0);
      if (c < 48 || c > 57) continue;
      try {
        fs.readdirSync(`${from}${name}/fd`);
      } catch {
        // gone, or not ours to read
      }
    }
  } finally {
    wd.leave();
  }
}
