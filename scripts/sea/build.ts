/**
 * Builds `slurm-otel` as one executable file: a Node single executable application (SEA) whose
 * main script is the whole CLI bundled by esbuild into one CommonJS file, with V8's code cache of
 * it (the start-up saving). scripts/sea/build.sh runs it after `npm run build`:
 *
 *   node dist/scripts/sea/build.js [--node PATH] [--out FILE] [--no-code-cache]
 *
 * --node: the Node binary to embed (default: 24.22.3 from scripts/node-lines.sh's cache, installed
 * there when absent). The blob is made by that same binary: a code cache is only valid for the V8
 * that wrote it. Node ≥ 25.5 makes the executable itself (`--build-sea`); older lines make the
 * blob (`--experimental-sea-config`) and postject puts it into a copy of the binary.
 * --out: default dist/sea/slurm-otel (outside the tracked files). The result is written aside and
 * renamed, so a failed build never leaves a file that looks good; an unchanged input (bundle,
 * runtime, options, this script) reuses the last output, whose input hash sits beside it (FILE.inputs).
 *
 * Reproducible: the same inputs give the same bundle from any working directory and, with
 * --no-code-cache, the same executable byte for byte. The code cache is not: V8 writes it under
 * the process's random hash seed. A fixed seed (--hash-seed) makes it repeatable, but V8 then
 * rejects it at start-up unless the executable runs with that seed too, which would give up V8's
 * defence against hash flooding in an agent that parses what the network sends; so the code cache
 * (some 300 KB) differs from build to build, and with it the executable.
 *
 * The runtime takes its settings from the executable only: NODE_OPTIONS is ignored (the SEA
 * config's execArgvExtension "none"; check() proves each build honours it, so a runtime without it
 * fails the build) and SIGUSR1 opens no inspector. Its V8 heap limits are set in the same config
 * (scripts/sea/v8-flags.ts). Nothing re-executes: start-up is unchanged. The bundle is
 * scripts/sea/bundle.ts's. The executable carries one asset, the node agent's compiled fd reader
 * (dist/native/fd-reader.node, which the build requires).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliBundle } from './bundle.js';
import { V8_FLAGS } from './v8-flags.js';
import { FD_READER_ASSET } from '../../src/node/read/fd-native.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** The node agent's fd reader, compiled by npm run build (scripts/native.mjs); the executable carries it. */
const FD_READER = path.join(ROOT, 'dist/native/fd-reader.node');
const DEFAULT_LINE = '24.22.3';
/** The fuse Node's binary carries: postject flips it to tell Node a blob is present. */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

interface Options {
  node: string;
  out: string;
  codeCache: boolean;
}

function fail(message: string): never {
  process.stderr.write(`[sea build] ERROR: ${message}\n`);
  process.exit(1);
}

function say(message: string): void {
  process.stderr.write(`[sea build] ${message}\n`);
}

function parseArgs(argv: string[]): Options {
  const opts = { node: '', out: path.join(ROOT, 'dist/sea/slurm-otel'), codeCache: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--no-code-cache') opts.codeCache = false;
    else if ((a === '--node' || a === '--out') && argv[i + 1]) opts[a === '--node' ? 'node' : 'out'] = argv[++i]!;
    else fail(`unknown argument '${a}' (usage: build.js [--node PATH] [--out FILE] [--no-code-cache])`);
  }
  return { ...opts, node: opts.node || cachedNode(DEFAULT_LINE), out: path.resolve(opts.out) };
}

/** Node `version` from scripts/node-lines.sh's cache (it installs it there when absent). */
function cachedNode(version: string): string {
  const r = spawnSync(path.join(ROOT, 'scripts/node-lines.sh'), ['install', version], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (r.status !== 0) fail(`scripts/node-lines.sh could not install Node ${version}`);
  return path.join(r.stdout.trim(), 'bin/node');
}

/** The runtime's version (`24.22.3`), which also proves it runs here. */
function runtimeVersion(node: string): string {
  const r = spawnSync(node, ['--version'], { encoding: 'utf8' });
  const m = /^v(\d+\.\d+\.\d+)\s*$/.exec(r.stdout ?? '');
  if (r.status !== 0 || !m) fail(`${node} does not run as a Node binary (${r.error?.message ?? r.stderr})`);
  return m[1]!;
}

/** Whether `node` builds an executable itself (Node ≥ 25.5) or needs postject. */
function hasBuildSea(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 25 || (major === 25 && minor >= 5);
}

/** Runs `node args` in `cwd`, failing the build with its output when it fails. */
function runNode(node: string, args: string[], cwd: string): void {
  const r = spawnSync(node, args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) fail(`${node} ${args.join(' ')} failed:\n${r.stderr}${r.stdout}`);
}

/** Writes the executable to `exe` from the bundle `main`, in the work directory `work`. */
function makeExecutable(opts: Options, version: string, main: string, work: string, exe: string): void {
  fs.writeFileSync(path.join(work, 'slurm-otel.cjs'), main);
  // Paths relative to `work` (the commands run there): the blob records the main script's name,
  // and a temporary directory's would make every build differ.
  const config = {
    main: 'slurm-otel.cjs',
    output: hasBuildSea(version) ? exe : 'sea.blob',
    disableExperimentalSEAWarning: true,
    useCodeCache: opts.codeCache,
    useSnapshot: false,
    // The runtime's settings are the executable's own, never the environment's: NODE_OPTIONS would
    // let whoever starts it (a unit's Environment=, a user's shell) load code with --require
    // before the CLI runs, open a debugger with --inspect, or change V8's limits. "none" makes
    // Node ignore NODE_OPTIONS (and --node-options) in the executable; nothing runs before that
    // decision, because Node takes it while it reads its options, before any JavaScript.
    // --disable-sigusr1: a SIGUSR1 from the agent's own user would otherwise open the inspector.
    // V8_FLAGS: the heap limits the executable keeps whatever the machine (v8-flags.ts says why).
    execArgv: ['--disable-sigusr1', ...V8_FLAGS],
    execArgvExtension: 'none',
    // The node agent's fd reader (src/node/read/fd-native.ts loads it from an unnamed file).
    assets: { [FD_READER_ASSET]: FD_READER_ASSET },
  };
  fs.copyFileSync(FD_READER, path.join(work, FD_READER_ASSET));
  const configFile = path.join(work, 'sea-config.json');
  fs.writeFileSync(configFile, JSON.stringify(config, null, 2));
  // The code cache is made under the flags the executable runs with: V8 rejects a cache written
  // under other flags that change its code (--optimize-for-size and --lite-mode do; the heap
  // limits do not), warning on stderr, which check() refuses.
  if (hasBuildSea(version)) {
    runNode(opts.node, [...V8_FLAGS, '--build-sea', configFile], work);
    return;
  }
  runNode(opts.node, [...V8_FLAGS, '--experimental-sea-config', configFile], work);
  fs.copyFileSync(opts.node, exe);
  fs.chmodSync(exe, 0o755);
  // Its CLI in a child: its ELF library prints harmless warnings, shown only when it fails.
  const postject = createRequire(import.meta.url).resolve('postject/dist/cli.js');
  runNode(
    process.execPath,
    [postject, exe, 'NODE_SEA_BLOB', path.join(work, config.output), '--sentinel-fuse', SEA_FUSE],
    work,
  );
}

/**
 * The executable answers `--version` with the package's version: it runs and its bundle loaded.
 * It does so under a NODE_OPTIONS that would kill it if applied (a heap too small for Node's own
 * start-up): a runtime that ignores execArgvExtension fails the build instead of shipping.
 */
function check(exe: string): void {
  const env = { PATH: '/usr/bin:/bin', NODE_OPTIONS: '--max-old-space-size=1' };
  const r = spawnSync(exe, ['--version'], { encoding: 'utf8', env });
  if (r.status !== 0 || !/^\d+\.\d+\.\d+/.test(r.stdout))
    fail(
      `${exe} --version failed (with NODE_OPTIONS=${env.NODE_OPTIONS}, which it must ignore):\n${r.stderr}${r.stdout}`,
    );
  if (r.stderr !== '') fail(`${exe} --version wrote to stderr:\n${r.stderr}`);
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const version = runtimeVersion(opts.node);
  const bundle = await cliBundle(`node${version.split('.')[0]}`, ROOT).catch((err: Error) => fail(err.message));
  if (!fs.existsSync(FD_READER))
    fail(`no ${path.relative(ROOT, FD_READER)}: npm run build compiles it (it needs a C compiler: gcc, libc6-dev)`);
  const inputs = createHash('sha256')
    .update(JSON.stringify({ version, codeCache: opts.codeCache, node: fs.readFileSync(opts.node).length }))
    .update(bundle)
    .update(fs.readFileSync(fileURLToPath(import.meta.url)))
    .update(JSON.stringify(V8_FLAGS))
    .update(fs.readFileSync(FD_READER))
    .digest('hex');
  const stamp = `${opts.out}.inputs`;
  if (fs.existsSync(opts.out) && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === inputs) {
    say(`${path.relative(ROOT, opts.out)} is up to date (Node ${version})`);
    process.stdout.write(`${opts.out}\n`);
    return;
  }
  fs.mkdirSync(path.dirname(opts.out), { recursive: true });
  const work = fs.mkdtempSync(`${opts.out}.work-`);
  const partial = path.join(work, 'slurm-otel');
  try {
    makeExecutable(opts, version, bundle, work, partial);
    check(partial);
    fs.rmSync(stamp, { force: true });
    fs.renameSync(partial, opts.out);
    fs.writeFileSync(stamp, inputs);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  const size = fs.statSync(opts.out).size;
  say(
    `${path.relative(ROOT, opts.out)}: Node ${version}, code cache ${opts.codeCache ? 'on' : 'off'}, ` +
      `${(size / 2 ** 20).toFixed(1)} MiB (bundle ${(bundle.length / 2 ** 10).toFixed(0)} KiB)`,
  );
  process.stdout.write(`${opts.out}\n`);
}

await main();
