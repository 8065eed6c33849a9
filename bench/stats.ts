/** Figures the benchmarks share. */
import fs from 'node:fs';
import { NODE_AGENT_V8_FLAGS, setV8Flags } from '../src/cli/v8-tuning.js';

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
 * A node agent bench runs under the V8 flags the node agent sets on itself, and says which;
 * `--without-agent-v8-flags` leaves them unset, to weigh them.
 */
export function asNodeAgent(): void {
  const flags = process.argv.includes('--without-agent-v8-flags') ? [] : setV8Flags(NODE_AGENT_V8_FLAGS);
  console.log(`V8 flags, as the node agent sets them: ${flags.join(' ') || 'none (--without-agent-v8-flags)'}`);
}

/** Milliseconds `fn` takes. */
export function time(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

/** The fd scan's floor: every `<procfs>/<pid>/fd` listed, nothing read. */
export function listingFloor(procfs: string): void {
  for (const name of fs.readdirSync(procfs)) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    try {
      fs.readdirSync(`${procfs}/${name}/fd`);
    } catch {
      // gone, or not ours to read
    }
  }
}
