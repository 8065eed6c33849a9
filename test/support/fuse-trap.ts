/**
 * Real FUSE mounts whose getattr blocks, refuses or fails (fuse-trap.c, built here with gcc and
 * libfuse3): the job files on a network filesystem that the node agent must neither wait on nor
 * be blinded by. Needs root and /dev/fuse.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { findTool, shouldRun, toolPath, waitFor, type Tool } from './tools.js';

export type TrapMode = 'block' | 'eacces' | 'eio' | 'ok';

const SOURCE = path.resolve('test/support/fuse-trap.c');

/** What the FUSE tests need, each named by the Debian package that brings it. */
export function fuseGate(): { skip: boolean; tools: readonly Tool[] } {
  const tools = [findTool('gcc', 'gcc'), findTool('pkg-config', 'pkg-config'), findTool('fusermount3', 'fuse3')];
  const possible = process.geteuid?.() === 0 && fs.existsSync('/dev/fuse');
  if (!possible && !process.env.CI)
    process.stderr.write('\n!!! SKIPPING the FUSE tests: they need root and /dev/fuse !!!\n\n');
  return { skip: !(possible || process.env.CI) || !tools.every(shouldRun), tools };
}

/** Builds the trap into `dir`; throws naming the package when libfuse3's headers are missing. */
export function buildFuseTrap(dir: string, tools: readonly Tool[]): string {
  for (const t of tools) toolPath(t);
  if (process.geteuid?.() !== 0 || !fs.existsSync('/dev/fuse'))
    throw new Error('the FUSE tests need root and /dev/fuse');
  let flags: string[];
  try {
    flags = execFileSync('pkg-config', ['--cflags', '--libs', 'fuse3'], { encoding: 'utf8' }).trim().split(/\s+/);
  } catch {
    throw new Error("libfuse3's development files are missing: apt-get install -y libfuse3-dev");
  }
  const bin = path.join(dir, 'fuse-trap');
  execFileSync('gcc', ['-O1', '-Wall', '-Werror', '-o', bin, SOURCE, ...flags], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return bin;
}

/** One mounted trap. */
export class FuseTrap {
  private out = '';

  private constructor(
    readonly mountpoint: string,
    private readonly child: ChildProcess,
  ) {
    child.stdout?.on('data', (d: Buffer) => (this.out += d.toString()));
  }

  /** Mounts a trap at a new directory under `dir`; `options` go to libfuse (`dev`, `fsname=…`). */
  static async mount(bin: string, dir: string, mode: TrapMode, options: readonly string[] = []): Promise<FuseTrap> {
    const mountpoint = fs.mkdtempSync(path.join(dir, `fuse-${mode}-`));
    const opts = ['fsname=fuse-trap', ...options].join(',');
    const child = spawn(bin, [mountpoint, mode, '-o', opts], { stdio: ['ignore', 'pipe', 'inherit'] });
    const trap = new FuseTrap(mountpoint, child);
    await waitFor(`the ${mode} trap mounted at ${mountpoint}`, () => trap.out.includes('mounted') && trap.mounted());
    return trap;
  }

  /** The file every trap holds, and one named like a verbs device. */
  file(name: 'job.dat' | 'uverbs3' = 'job.dat'): string {
    return path.join(this.mountpoint, name);
  }

  /** Whether this machine's mount table lists the trap. */
  mounted(): boolean {
    return fs
      .readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .some((l) => l.split(' ')[4] === this.mountpoint);
  }

  /** From now on a getattr of a file is trapped. */
  arm(): void {
    this.child.kill('SIGUSR1');
  }

  /** How many getattr requests were trapped so far. */
  trapped(): number {
    return (this.out.match(/^armed \d+$/gm) ?? []).length;
  }

  /** Unmounts: libfuse's own handler on SIGTERM; a lazy unmount if it is gone already. */
  async unmount(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    if (this.mounted()) execFileSync('umount', ['-l', this.mountpoint]);
    fs.rmSync(this.mountpoint, { recursive: true, force: true });
  }
}
