/**
 * What a full fd rescan costs the node agent's event loop, and what knowing an fd's filesystem
 * (fdinfo + mountinfo, before any stat) costs on the real /proc. Prints figures and ratios:
 *   stall   the longest event-loop delay during a cold cycle of the heavy synthetic node
 *           (600 job processes × 256 fds, 200 others), straight through (explain, --once) and
 *           yielding (the running agent); and the cycle's wall time each way
 *   real    a cold fd scan of the real /proc with PROCS extra processes holding FDS files each
 *           on a local filesystem: asking each path fd's mount first (the agent) against a bare
 *           stat of each path fd (the rule before), alternately, medians of RUNS
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { NodeCollector } from '../src/node/collect.js';
import { writeTree } from '../src/demo/nodetree.js';
import { FdScanner } from '../src/node/read/owners.js';
import { Problems } from '../src/node/read/problems.js';
import { deviceNumber } from '../src/node/read/roots.js';
import { HEAVY_NODE, heavyTree, nodeTreeDir } from './heavy-node.js';
import { asNodeAgent, median, sayRuntime } from './stats.js';

const PROCS = 300;
const FDS = 100;
const RUNS = 7;

async function stall(yielding: boolean, dir: string): Promise<{ wallMs: number; maxStallMs: number }> {
  const roots = writeTree(fs.mkdtempSync(path.join(dir, 'tree-')), heavyTree(HEAVY_NODE));
  const collector = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 });
  // A timer that wants to run every millisecond: the longest gap between its runs is the longest
  // a scrape or a signal would have waited.
  let last = performance.now();
  let maxGap = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
  }, 1);
  await new Promise((r) => setTimeout(r, 5));
  const t0 = performance.now();
  if (yielding) await collector.cycleYielding(undefined, 1000);
  else collector.cycle(1000);
  const wallMs = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 5));
  clearInterval(tick);
  collector.close();
  return { wallMs, maxStallMs: maxGap };
}

/** PROCS bash processes, each holding FDS fds on one file in `dir`. */
async function holders(dir: string): Promise<ChildProcess[]> {
  const file = path.join(dir, 'job.dat');
  fs.writeFileSync(file, 'x');
  const opens = Array.from({ length: FDS }, (_, i) => `${i + 10}<"$0"`).join(' ');
  const out: ChildProcess[] = [];
  for (let i = 0; i < PROCS; i++)
    out.push(spawn('bash', ['-c', `exec ${opens}; exec sleep 600`, file], { stdio: 'ignore' }));
  const ready = (p: ChildProcess) => fs.existsSync(`/proc/${p.pid}/fd/${FDS + 9}`);
  for (let n = 0; n < 2000 && !out.every(ready); n++) await new Promise((r) => setTimeout(r, 10));
  return out;
}

/** The rule before: a stat of every path fd, whatever its filesystem. */
const statEveryPath = (fdPath: string): string | undefined => {
  const st = fs.statSync(fdPath, { throwIfNoEntry: false });
  return st?.isCharacterDevice() ? deviceNumber(st.rdev) : undefined;
};

function coldScan(withMounts: boolean): { ms: number; linksRead: number } {
  const scanner = withMounts ? new FdScanner('/proc', 60_000) : new FdScanner('/proc', 60_000, statEveryPath);
  const t0 = performance.now();
  const scan = scanner.scan(0, new Problems(), () => new Map());
  return { ms: performance.now() - t0, linksRead: scan.stats.fdLinksRead };
}

async function main(): Promise<void> {
  const dir = nodeTreeDir('slurm-otel-bench-rescan-');
  try {
    for (const yielding of [false, true]) {
      const r = await stall(yielding, dir);
      console.log(
        `stall, ${yielding ? 'yielding' : 'straight'}: cold cycle ${r.wallMs.toFixed(0)} ms, longest event-loop stall ${r.maxStallMs.toFixed(1)} ms`,
      );
    }
    const procs = await holders(dir);
    try {
      const mounts: number[] = [];
      const bare: number[] = [];
      let links = 0;
      for (let i = 0; i < RUNS; i++) {
        const a = coldScan(true);
        const b = coldScan(false);
        mounts.push(a.ms);
        bare.push(b.ms);
        links = a.linksRead;
      }
      const [m, b] = [median(mounts), median(bare)];
      console.log(
        `real /proc, ${links} fd links: cold scan ${m.toFixed(1)} ms asking the mount first, ${b.toFixed(1)} ms with a bare stat: ${(m / b).toFixed(2)}×`,
      );
    } finally {
      for (const p of procs) p.kill('SIGKILL');
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

asNodeAgent();
sayRuntime();
await main();
