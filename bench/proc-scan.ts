/**
 * The node agent's fd scan on this machine's real /proc, where the synthetic node of node-cycle.ts
 * cannot show what procfs costs (a process's `stat` file is made by the kernel on each read).
 * Starts `--processes P` (default 600) `sleep`s holding `--fds F` (default 256) fds each, `--paths
 * N` of them (default 5, the heavy node's 2 %) on /dev/null and the rest on one socket, beside
 * whatever the machine runs, then prints, against baselines measured in the same run:
 *   cold scan    (median of fresh scanners) vs `find /proc/[0-9]*\/fd -lname '*uverbs*'`
 *   steady scan  (median of a warm scanner) vs listing every /proc/<pid>/fd, interleaved
 * The scanner is the agent's own (FdScanner on the real procfs: device numbers by fd-mounts.ts).
 *
 *   node dist/bench/proc-scan.js [--processes P] [--fds F] [--paths N]
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { FdScanner } from '../src/node/read/owners.js';
import { Problems } from '../src/node/read/problems.js';
import { socketFd, startSleepers } from './sleepers.js';
import { alternated, asNodeAgent, listingFloor, sayRuntime, time } from './stats.js';

const arg = (name: string, dflt: number): number =>
  process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : dflt;
const PROCESSES = arg('--processes', 600);
const FDS = arg('--fds', 256);
const PATHS = arg('--paths', 5);
const COLD_RUNS = 7;
const STEADY_RUNS = 30;
const NO_VERBS = (): ReadonlyMap<string, string> => new Map();

/** P sleepers, each with F fds (0 to F-1), N of them on /dev/null, started. */
async function sleepers(): Promise<ChildProcess[]> {
  const nul = fs.openSync('/dev/null', 'r');
  const sock = await socketFd();
  const stdio = Array.from({ length: FDS }, (_, i) => (i < PATHS ? nul : sock.fd));
  try {
    return await startSleepers(PROCESSES, () => stdio);
  } finally {
    fs.closeSync(nul);
    sock.close();
  }
}

async function main(): Promise<void> {
  asNodeAgent();
  sayRuntime();
  const children = await sleepers();
  try {
    console.log(
      `${PROCESSES} sleep processes × ${FDS} fds (${PATHS} of them paths) started (${fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length} processes in /proc)`,
    );
    const cold = (): number => time(() => new FdScanner('/proc', 60_000).scan(0, new Problems(), NO_VERBS));
    const find = (): number =>
      time(() => execFileSync('sh', ['-c', "find /proc/[0-9]*/fd -lname '*uverbs*' 2>/dev/null; true"]));
    const [c, f] = alternated(COLD_RUNS, cold, find);
    console.log(`cold scan:   ${c.toFixed(1)} ms   find -lname: ${f.toFixed(1)} ms   ratio ${(c / f).toFixed(2)}×`);
    const scanner = new FdScanner('/proc', 60_000);
    scanner.scan(0, new Problems(), NO_VERBS);
    const [s, fl] = alternated(
      STEADY_RUNS,
      (i) => time(() => scanner.scan(i + 1, new Problems(), NO_VERBS)),
      () => time(() => listingFloor('/proc')),
    );
    console.log(
      `steady scan: ${s.toFixed(1)} ms   fd listing floor: ${fl.toFixed(1)} ms   ratio ${(s / fl).toFixed(2)}×`,
    );
    scanner.stop();
  } finally {
    for (const child of children) child.kill('SIGKILL');
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
