/**
 * The single executable and the Node-less trixie chroot it is proved in (scripts/sea/): the
 * executable built (or reused) once per test file, and throw-away copies of the chroot (overlays,
 * see scripts/sea/chroot.sh) to run commands in. Needs root, debootstrap (the chroot is made once,
 * cached outside the clone) and unshare; under CI a missing one fails the tests.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { demoTree } from '../../src/demo/scenarios.js';
import { writeTree, type TreeRoots } from '../../src/demo/nodetree.js';
import { withDeviceNodes } from './node-tree.js';
import { findTool, shouldRun, toolPath } from './tools.js';

const CHROOT_SH = path.resolve('scripts/sea/chroot.sh');
const DEB_SH = path.resolve('scripts/deb/build.sh');
const BUILD_JS = path.resolve('dist/scripts/sea/build.js');
/** A cold start installs Node 24 from the registry and debootstraps trixie: minutes, not seconds. */
export const PREPARE_LIMIT_MS = 900_000;

const debootstrap = findTool('debootstrap', 'debootstrap');
const unshare = findTool('unshare', 'util-linux');
const flock = findTool('flock', 'util-linux');
const isRoot = process.geteuid?.() === 0;
if (!isRoot && !process.env.CI)
  process.stderr.write('\n!!! SKIPPING the Node-less chroot tests: mounting an overlay and chroot need root !!!\n\n');

/** Whether the tests run: always under CI (they then fail on what is missing). */
export const canRunChroot =
  (shouldRun(debootstrap) && shouldRun(unshare) && shouldRun(flock) && isRoot) || Boolean(process.env.CI);

/** Runs a preparation step to its end; its stdout's last line (a path), or the step's error. */
function prepare(what: string, cmd: string, args: string[], env: Record<string, string> = {}): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: PREPARE_LIMIT_MS, env: { ...process.env, ...env } });
  if (r.status !== 0) throw new Error(`${what} failed (${r.status ?? r.signal}): ${r.stderr}${r.error?.message ?? ''}`);
  const out = r.stdout.trim().split('\n').pop() ?? '';
  if (!fs.existsSync(out)) throw new Error(`${what} printed no path that exists: ${r.stdout}`);
  return out;
}

/** Makes sure everything is there: root, the tools, the chroot. Throws naming what is missing. */
function requirements(): void {
  if (!isRoot) throw new Error('the Node-less chroot tests need root (CI is set, so this fails instead of skipping)');
  toolPath(debootstrap);
  toolPath(unshare);
}

/** The executable (scripts/sea/build.ts, reused when its inputs are unchanged). */
export function singleExecutable(): string {
  if (!fs.existsSync(BUILD_JS)) throw new Error(`no ${BUILD_JS}: npm run build first`);
  // Test files run side by side: one builds, the others wait and reuse its output.
  fs.mkdirSync(path.resolve('dist/sea'), { recursive: true });
  const lock = path.resolve('dist/sea/.build.lock');
  return prepare('the single executable build', toolPath(flock), ['-w', '600', lock, process.execPath, BUILD_JS]);
}

/** The .deb of `exe` (scripts/deb/build.sh; zstd, which the chroot's dpkg reads, to keep it quick). */
export function debPackage(exe: string): string {
  return prepare('scripts/deb/build.sh', DEB_SH, [exe], { SLURM_OTEL_DEB_COMPRESSION: 'zstd' });
}

/** The cached Node-less chroot (made on first use). */
export function nonodeChroot(): string {
  requirements();
  return prepare('scripts/sea/chroot.sh', CHROOT_SH, []);
}

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A started command in the sandbox: its output so far, and its end. */
export interface Started {
  readonly pid: number;
  readonly output: () => { stdout: string; stderr: string };
  readonly exited: Promise<Run>;
  kill(signal: NodeJS.Signals): void;
}

/**
 * One throw-away copy of the chroot: files put under `upper` appear at the same place inside it,
 * and what a command writes stays for the next command (dpkg's database, a system user).
 */
export class Sandbox {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-nonode-'));
  readonly upper = path.join(this.dir, 'upper');
  private readonly running = new Set<Started>();

  constructor() {
    // The overlay's root directory takes the upper layer's mode: a system user must get through it.
    fs.mkdirSync(this.upper, { mode: 0o755 });
    fs.chmodSync(this.upper, 0o755);
  }

  /** Copies a host file to `inside` (an absolute path in the chroot). */
  put(file: string, inside: string, mode?: number): void {
    const dest = path.join(this.upper, inside);
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    fs.copyFileSync(file, dest);
    if (mode !== undefined) fs.chmodSync(dest, mode);
  }

  /** The host path of `inside`, to write into or read back. */
  host(inside: string): string {
    return path.join(this.upper, inside);
  }

  /** Starts `cmd args` in the chroot with only `env` (plus a PATH of the chroot's own). */
  start(cmd: string, args: readonly string[], env: Record<string, string> = {}): Started {
    const child = spawn(CHROOT_SH, ['run', this.dir, cmd, ...args], {
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const started: Started = {
      pid: child.pid ?? -1,
      output: () => ({ stdout, stderr }),
      exited: new Promise((resolve) =>
        child.on('close', (code, signal) => {
          this.running.delete(started);
          resolve({ code, signal, stdout, stderr });
        }),
      ),
      kill: (signal) => void child.kill(signal),
    };
    this.running.add(started);
    return started;
  }

  /** Runs `cmd args` in the chroot to its end; killed after `limitMs` (a hang fails, never blocks). */
  async run(cmd: string, args: readonly string[], env: Record<string, string> = {}, limitMs = 60_000): Promise<Run> {
    const s = this.start(cmd, args, env);
    const kill = setTimeout(() => s.kill('SIGKILL'), limitMs);
    const r = await s.exited;
    clearTimeout(kill);
    return r;
  }

  /** Kills what is still running, then removes the copy (nothing stays mounted: see chroot.sh). */
  async remove(): Promise<void> {
    for (const s of [...this.running]) {
      s.kill('SIGKILL');
      await s.exited;
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The demo's synthetic node written into the sandbox at `at` (a path inside the chroot), its fds
 * on real device nodes (withDeviceNodes); its roots as the chroot sees them.
 */
export function demoTreeIn(box: Sandbox, at: string): TreeRoots {
  const written = withDeviceNodes(writeTree(box.host(at), demoTree({ layout: 'v2-sluid', nonJobHolder: false })), at);
  const inside = (p: string): string => p.slice(box.upper.length);
  return {
    ...written,
    sysfs: inside(written.sysfs),
    procfs: inside(written.procfs),
    cgroupfs: inside(written.cgroupfs),
  };
}
