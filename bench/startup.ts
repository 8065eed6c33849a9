/**
 * Start-up of `slurm-otel node --once` on the demo node's synthetic tree: the npm install (the
 * machine's Node and the Node the executable embeds), the single executable with and without its
 * code cache, and a bare `node -e 0` of each Node. Each run is a fresh process timed from spawn
 * to exit (wall), with its CPU time and peak RSS from /usr/bin/time (the kernel's rusage; CPU time
 * is the steadier figure on a shared machine). The variants take turns, round after round, so a
 * change in the machine's load falls on all of them alike. Prints medians, the fastest run, the
 * ratios, and the sizes on disk.
 *
 * Run: npm run build && node dist/bench/startup.js [--runs N (15)] [--node PATH (24.22.3 from the cache)]
 * It builds (or reuses) dist/sea/slurm-otel and dist/sea/slurm-otel-nocache first.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { demoTree } from '../src/demo/scenarios.js';
import { writeTree } from '../src/demo/nodetree.js';
import { treeFlags } from '../test/support/node-tree.js';
import { median } from './stats.js';

const TIME = '/usr/bin/time';
const BUILD = path.resolve('dist/scripts/sea/build.js');
const MAIN = path.resolve('dist/src/cli/main.js');

interface Variant {
  readonly name: string;
  readonly cmd: string;
  readonly args: readonly string[];
}

interface Figures {
  wallMs: number[];
  cpuMs: number[];
  rssKiB: number[];
}

function option(name: string, fallback: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] ? (process.argv[i + 1] as string) : fallback;
}

/** Builds (or reuses) an executable; its path. */
function executable(node: string, extra: string[]): string {
  const args = [BUILD, ...(node ? ['--node', node] : []), ...extra];
  return execFileSync(process.execPath, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/** The Node an executable embeds: the one its build used (24.22.3 from the cache by default). */
function cachedNode(version: string): string {
  const dir = execFileSync('scripts/node-lines.sh', ['install', version], { encoding: 'utf8' }).trim();
  return path.join(dir, 'bin/node');
}

/** One run under /usr/bin/time: wall time from spawn to exit, CPU time (user + system), peak RSS. */
function once(v: Variant, rssFile: string): { wallMs: number; cpuMs: number; rssKiB: number } {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(TIME, ['-f', '%M %U %S', '-o', rssFile, v.cmd, ...v.args], {
    encoding: 'utf8',
    env: { PATH: '/usr/bin:/bin' },
    maxBuffer: 64 << 20,
  });
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${v.name} failed (${r.status ?? r.signal}): ${r.stderr}`);
  const [rss = NaN, user = NaN, sys = NaN] = (fs.readFileSync(rssFile, 'utf8').trim().split('\n').pop() ?? '')
    .split(' ')
    .map(Number);
  return { wallMs, cpuMs: (user + sys) * 1000, rssKiB: rss };
}

function sizeOf(p: string): number {
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.size;
  return fs.readdirSync(p).reduce((sum, e) => sum + sizeOf(path.join(p, e)), 0);
}

/** What an npm install puts on disk: dist/src and the production dependencies (not Node itself). */
function npmInstallBytes(): number {
  const out = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { encoding: 'utf8' });
  const dirs = out
    .trim()
    .split('\n')
    .filter((d) => d.includes(`${path.sep}node_modules${path.sep}`));
  const top = dirs.filter((d) => !dirs.some((o) => o !== d && d.startsWith(`${o}${path.sep}`)));
  return top.reduce((sum, d) => sum + sizeOf(d), sizeOf('dist/src'));
}

const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

function main(): void {
  if (!fs.existsSync(TIME)) throw new Error(`${TIME} is missing: apt-get install -y time`);
  if (!fs.existsSync(MAIN) || !fs.existsSync(BUILD)) throw new Error('no dist/: run npm run build first');
  const runs = Number(option('--runs', '15'));
  const node24 = option('--node', '') || cachedNode('24.22.3');
  const sea = executable(node24, []);
  const seaNoCache = executable(node24, ['--no-code-cache', '--out', path.resolve('dist/sea/slurm-otel-nocache')]);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-startup-'));
  const once_ = ['node', '--once', ...treeFlags(writeTree(dir, demoTree({ layout: 'v2-sluid', nonJobHolder: false })))];
  once_.push('--log-level', 'error');
  const nodeVersion = (node: string): string => execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  const here = `Node ${nodeVersion(process.execPath)}`;
  const embedded = `Node ${nodeVersion(node24)}`;
  // Run under the embedded Node itself, the machine's Node is that one: each of its variants once.
  const variants: Variant[] = [
    { name: `npm install, ${here}`, cmd: process.execPath, args: [MAIN, ...once_] },
    { name: `npm install, ${embedded}`, cmd: node24, args: [MAIN, ...once_] },
    { name: 'executable, code cache', cmd: sea, args: once_ },
    { name: 'executable, no code cache', cmd: seaNoCache, args: once_ },
    { name: `bare node -e 0, ${here}`, cmd: process.execPath, args: ['-e', '0'] },
    { name: `bare node -e 0, ${embedded}`, cmd: node24, args: ['-e', '0'] },
  ].filter((v, i, all) => all.findIndex((w) => w.name === v.name) === i);
  const figures = new Map<string, Figures>(variants.map((v) => [v.name, { wallMs: [], cpuMs: [], rssKiB: [] }]));
  const rssFile = path.join(dir, 'rss');
  try {
    for (const v of variants) once(v, rssFile); // warm the page cache
    for (let round = 0; round < runs; round++)
      for (const v of variants) {
        const r = once(v, rssFile);
        figures.get(v.name)!.wallMs.push(r.wallMs);
        figures.get(v.name)!.rssKiB.push(r.rssKiB);
        figures.get(v.name)!.cpuMs.push(r.cpuMs);
      }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }

  const med = (name: string): number => median(figures.get(name)!.wallMs);
  const bare = med(`bare node -e 0, ${embedded}`);
  const npm = med(`npm install, ${embedded}`);
  console.log(
    `slurm-otel node --once on the demo tree, ${runs} runs each (wall: median, fastest; CPU user+sys and peak RSS: medians)\n`,
  );
  console.log(
    `${'variant'.padEnd(32)} ${'median'.padStart(8)} ${'fastest'.padStart(8)} ${'CPU'.padStart(8)} ${'RSS'.padStart(8)}  ratios`,
  );
  for (const v of variants) {
    const f = figures.get(v.name)!;
    const m = median(f.wallMs);
    console.log(
      `${v.name.padEnd(32)} ${`${m.toFixed(0)} ms`.padStart(8)} ${`${Math.min(...f.wallMs).toFixed(0)} ms`.padStart(8)} ` +
        `${`${median(f.cpuMs).toFixed(0)} ms`.padStart(8)} ${`${(median(f.rssKiB) / 1024).toFixed(0)} MiB`.padStart(8)}  ` +
        `${(m / bare).toFixed(1)}× bare ${embedded}, ${(m / npm).toFixed(2)}× npm install on it`,
    );
  }
  console.log(
    `\nsizes: executable ${mib(fs.statSync(sea).size)} (no code cache: ${mib(fs.statSync(seaNoCache).size)}); ` +
      `npm install ${mib(npmInstallBytes())} (dist/src + production node_modules) + Node ${mib(fs.statSync(fs.realpathSync(node24)).size)}`,
  );
  const deb = fs.existsSync('dist/deb') ? fs.readdirSync('dist/deb').filter((f) => f.endsWith('.deb')) : [];
  for (const f of deb) console.log(`       ${f}: ${mib(fs.statSync(path.join('dist/deb', f)).size)}`);
}

main();
