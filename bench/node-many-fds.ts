/**
 * What a user's processes holding very many fds cost the node agent, on the real /proc: PROCS
 * processes (a bash and the processes it starts, which inherit its table), each holding FDS fds on
 * /dev/null, a character device on devtmpfs and so read and stat'ed as a device may be. Any user
 * can make these: the fds cost the kernel a few bytes each, and a systemd node lets one process
 * hold 524,288. Prints, beside baselines of the same run (the cycles yield, as the running
 * agent's do, so that the fd probes' answers come within them):
 *   cold cycle   (a fresh collector) vs `find /proc/[0-9]*\/fd -lname '*uverbs*'`
 *   steady cycle (median of a warm collector) vs listing every /proc/<pid>/fd
 *   what the collector keeps on the heap and in array buffers after its cycles (collected before
 *   and after), in all and per fd held: what a million such fds would cost the agent's memory;
 *   the process's peak RSS
 * `--processes P --fds N` (default 100 × 20,000; N is capped by this shell's hard limit on open
 * files). `--file F`: the fds are on F instead, and sysfs is a synthetic one with one HCA, so that a
 * file named like a verbs device on a filesystem the agent does not stat (an overlay, NFS) is asked
 * in a child process (fd-probe.ts). `--churn`: before each steady cycle every holder but the first
 * opens one fd more (a table that grows, as one leaking fds does), and the steady line is of those
 * cycles, with the fd links each read. Runs as any user (its own processes' tables are readable).
 *   npm run build && node dist/bench/node-many-fds.js
 */
import { execSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { HOLD_COUNTER_FILES, NodeCollector } from '../src/node/collect.js';
import { DEFAULT_ROOTS } from '../src/node/read/roots.js';
import { writeHca } from '../src/demo/nodetree.js';
import { asNodeAgent, listingFloor, median, sayRuntime, time } from './stats.js';

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
}

const PROCS = option('--processes', 100);
const FILE = process.argv.includes('--file') ? (process.argv[process.argv.indexOf('--file') + 1] as string) : undefined;
const FDS = option('--fds', 20_000);
const CHURN = process.argv.includes('--churn');
const STEADY_RUNS = 5;
const MIB = 2 ** 20;

/**
 * A bash that opens the fds on /dev/null and starts PROCS - 1 processes holding them, each reading
 * the bench's pipe: they end when the bench does, however it ends (an agent out of memory too).
 * With --churn they are subshells that open one fd more at each SIGUSR1.
 */
function holders(): ChildProcess {
  const churner = '( trap \'exec {x}<"$f"\' USR1; while read -r _ <&3 || [ $? -gt 128 ]; do :; done ) &';
  const script = [
    'exec 3<&0',
    'n=$(( $1 < $(ulimit -Hn) ? $1 : $(ulimit -Hn) ))',
    'ulimit -n "$n"',
    'f=$3',
    'for ((i = 4; i < n - 8; i++)); do eval "exec $i<\\"\\$f\\""; done',
    `for ((p = 1; p < $2; p++)); do ${CHURN ? churner : 'head -c 1 <&3 > /dev/null &'} done`,
    'echo "$n"',
    'exec head -c 1 <&3 > /dev/null',
  ].join('\n');
  return spawn('bash', ['-c', script, 'holders', String(FDS), String(PROCS), FILE ?? '/dev/null'], {
    stdio: ['pipe', 'pipe', 'inherit'],
    detached: true,
  });
}

/** Waits for the holders' line (their table size), and for every one of them to show in /proc. */
async function ready(bash: ChildProcess): Promise<number> {
  const line = await new Promise<string>((resolve, reject) => {
    bash.stdout?.once('data', (d: Buffer) => resolve(d.toString().trim()));
    bash.once('exit', (code) => reject(new Error(`the holders' bash exited (${code})`)));
  });
  const want = Number(line) - 8;
  const held = (): number => children(bash).filter((k) => fdCount(k) >= want).length;
  for (let i = 0; i < 600 && held() < PROCS - 1; i++) await new Promise((r) => setTimeout(r, 50));
  return want;
}

/** The processes the holders' bash started. */
function children(bash: ChildProcess): string[] {
  return fs.readFileSync(`/proc/${bash.pid}/task/${bash.pid}/children`, 'latin1').split(/\s+/).filter(Boolean);
}

function fdCount(pid: string): number {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

/** --churn: every holder but the first opens one fd more; waits until each has. */
async function churn(bash: ChildProcess): Promise<void> {
  const kids = children(bash).map((k) => ({ k, had: fdCount(k) }));
  for (const { k } of kids) process.kill(Number(k), 'SIGUSR1');
  for (let i = 0; i < 600 && kids.some(({ k, had }) => fdCount(k) <= had); i++)
    await new Promise((r) => setTimeout(r, 20));
}

/** A synthetic sysfs with one HCA (one verbs device), in a temporary directory. */
function oneHca(): string {
  const sysfs = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-bench-sysfs-'));
  writeHca(sysfs, {
    name: 'mlx5_0',
    uverbs: 0,
    ports: [{ linkLayer: 'InfiniBand', rate: '400 Gb/sec', counters: {} }],
  });
  return sysfs;
}

/** One cycle as the running agent makes it (yielding: the fd probes' answers come meanwhile): ms, links read. */
async function cycleMs(collector: NodeCollector, nowMs: number): Promise<[ms: number, linksRead: number]> {
  const t0 = performance.now();
  const c = await collector.cycleYielding(undefined, nowMs);
  return [performance.now() - t0, c.snapshot.stats.fdLinksRead];
}

/** The heap's live bytes and the array buffers' outside it (a large table's fd numbers), collected first. */
function liveHeap(gc: () => void): number {
  gc();
  gc();
  return v8.getHeapStatistics().used_heap_size + process.memoryUsage().arrayBuffers;
}

async function main(): Promise<void> {
  asNodeAgent();
  sayRuntime();
  v8.setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const sysfs = FILE === undefined ? undefined : oneHca();
  const bash = holders();
  try {
    const fds = await ready(bash);
    console.log(
      `holders: ${PROCS} processes × ${fds} fds on ${FILE ?? '/dev/null'} (${((PROCS * fds) / 1e6).toFixed(2)} million)`,
    );
    const before = liveHeap(gc);
    const collector = new NodeCollector({
      roots: sysfs === undefined ? DEFAULT_ROOTS : { ...DEFAULT_ROOTS, sysfs },
      fdRescanIntervalMs: 3_600_000,
      holdCounterFiles: HOLD_COUNTER_FILES,
    });
    const [cold] = await cycleMs(collector, 0);
    // find fails on the fd tables it may not read (other users' processes): its time counts all the same.
    const find = time(() => execSync(`find /proc/[0-9]*/fd -lname '*uverbs*' > /dev/null 2>&1 || true`));
    console.log(
      `cold cycle: ${(cold / 1000).toFixed(1)} s   find -lname: ${(find / 1000).toFixed(1)} s   ratio ${(cold / find).toFixed(2)}×`,
    );
    const steady: number[] = [];
    const floor: number[] = [];
    const links: number[] = [];
    for (let i = 1; i <= STEADY_RUNS; i++) {
      if (CHURN) await churn(bash);
      const [ms, read] = await cycleMs(collector, 1000 * i);
      steady.push(ms);
      links.push(read);
      floor.push(time(() => listingFloor('/proc')));
    }
    const s = median(steady);
    const f = median(floor);
    console.log(
      `${CHURN ? 'cycle after each holder opened one fd more' : 'steady cycle'}: ${s.toFixed(0)} ms   ` +
        `fd listing floor: ${f.toFixed(0)} ms   ratio ${(s / f).toFixed(2)}×   fd links read: ${links.join(', ')}`,
    );
    const kept = liveHeap(gc) - before;
    console.log(
      `kept by the collector (heap and array buffers): ${(kept / MIB).toFixed(1)} MiB, ` +
        `${(kept / (PROCS * fds)).toFixed(2)} bytes a held fd; ` +
        `peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`,
    );
    collector.close();
  } finally {
    // The bash and the processes it started are one process group of their own.
    if (bash.pid !== undefined) process.kill(-bash.pid, 'SIGKILL');
    if (sysfs !== undefined) fs.rmSync(sysfs, { recursive: true, force: true });
  }
}

await main();
