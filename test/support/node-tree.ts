/** A synthetic node tree as the command-line tests use it: its flags, explain on it, a process renamed. */
import { execFileSync, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { nvidiaDevices, standInGpus, type ProcSpec, type TreeRoots, type TreeSpec } from '../../src/demo/nodetree.js';

export const BIN = path.resolve('dist/src/cli/main.js');

/** Where a tree's device nodes are made, beside its sys, proc and cgroup directories. */
const NODES = 'dev-nodes';

const isRoot = (): boolean => process.getuid?.() === 0;

/**
 * Whether a test that needs the command to find holders in a synthetic tree runs: the command
 * learns an fd's device only from stat, so the tree needs real device nodes, and mknod needs
 * root. Under CI such tests always run (and fail without root); elsewhere they are skipped with a
 * message saying why.
 */
export function canMakeDeviceNodes(what: string): boolean {
  if (isRoot() || process.env.CI) return true;
  process.stderr.write(`\n!!! SKIPPING ${what}: its device nodes (mknod) need root; run the tests as root !!!\n\n`);
  return false;
}

/**
 * Gives the tree's fds real character devices, so that the command finds their holders as on a
 * real node (by stat, where fdinfo and mountinfo say the fd's mount is local): a node made with
 * mknod under `<tree>/dev-nodes` for each device link text its fds have (one of its `devices`),
 * at the number it gives, and every fd link with that text pointed at it. The links then carry the
 * tree's prefix, as a chrooted process's do. `seenAt`: the tree's directory as the command sees
 * it, when it runs in a chroot. Links already pointed are left alone, so a second call only
 * serves processes written since. Returns the roots with `devices` and `fdDevice` for the new
 * link texts.
 */
export function withDeviceNodes(roots: TreeRoots, seenAt?: string): TreeRoots {
  if (!isRoot()) throw new Error('device nodes for a synthetic tree need root (mknod)');
  const dir = path.dirname(roots.procfs);
  const nodePath = (link: string): string => path.join(dir, NODES, link);
  const seenPath = (link: string): string => path.join(seenAt ?? dir, NODES, link);
  const fds = deviceFds(roots);
  makeNodes([...new Set(fds.map((f) => f.link))].map((link) => [nodePath(link), roots.devices.get(link) as string]));
  for (const { file, link } of fds) {
    fs.rmSync(file);
    fs.symlinkSync(seenPath(link), file);
  }
  const devices = new Map([...roots.devices, ...[...roots.devices].map(([l, d]) => [seenPath(l), d] as const)]);
  return { ...roots, devices, fdDevice: (_fdPath, link) => devices.get(link) };
}

/** The tree's fd links whose text is one of its devices (not pointed at a node yet). */
function deviceFds(roots: TreeRoots): { file: string; link: string }[] {
  const out: { file: string; link: string }[] = [];
  for (const pid of fs.readdirSync(roots.procfs)) {
    // Processes only: a tree with GPUs also has /proc/devices and /proc/driver.
    if (!/^\d+$/.test(pid)) continue;
    const fdDir = path.join(roots.procfs, pid, 'fd');
    for (const fd of readableEntries(fdDir)) {
      if (!fd.isSymbolicLink()) continue;
      const file = path.join(fdDir, fd.name);
      const link = fs.readlinkSync(file);
      if (roots.devices.has(link)) out.push({ file, link });
    }
  }
  return out;
}

/** Character devices (mode 0666) at each path not made yet, with one shell for them all. */
function makeNodes(nodes: readonly (readonly [string, string])[]): void {
  const missing = nodes.filter(([file]) => !fs.existsSync(file));
  if (missing.length === 0) return;
  for (const [file] of missing) fs.mkdirSync(path.dirname(file), { recursive: true });
  const script = 'while [ $# -gt 0 ]; do mknod -m 666 "$1" c "$2" "$3" || exit 1; shift 3; done';
  const args = missing.flatMap(([file, dev]) => [file, ...dev.split(':')]);
  execFileSync('sh', ['-c', script, 'sh', ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
}

/** A directory's entries; none when it cannot be read (a test made it unreadable on purpose). */
function readableEntries(dir: string): fs.Dirent[] {
  try {
    return fs.readdirSync(dir, { withFileTypes: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EACCES') return [];
    throw e;
  }
}

/** The flags that point the node agent (or explain) at a tree's roots instead of the host's. */
export function rootFlags(roots: TreeRoots): string[] {
  return ['--sysfs-root', roots.sysfs, '--procfs-root', roots.procfs, '--cgroup-root', roots.cgroupfs];
}

/**
 * rootFlags of a synthetic tree on this host, its device nodes made first (withDeviceNodes). Not
 * as root, the tree stays as written: the command cannot tell what its fds are and names the
 * device paths this host lacks (canMakeDeviceNodes gates the tests that look for holders).
 */
export function treeFlags(roots: TreeRoots): string[] {
  if (isRoot()) withDeviceNodes(roots);
  return rootFlags(roots);
}

/** `slurm-otel explain [flags]` on the tree, run to its end. */
export function explainCli(roots: TreeRoots, ...flags: string[]): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [BIN, 'explain', ...flags, ...treeFlags(roots)], { encoding: 'utf8' });
}

/** Gives a process of the tree another name, in comm and in stat alike (as the kernel shows one name in both). */
export function renameProcess(procfs: string, pid: number, name: string): void {
  fs.writeFileSync(path.join(procfs, String(pid), 'comm'), `${name}\n`);
  const stat = path.join(procfs, String(pid), 'stat');
  const old = fs.readFileSync(stat, 'utf8');
  fs.writeFileSync(stat, `${old.slice(0, old.indexOf('(') + 1)}${name}${old.slice(old.lastIndexOf(')'))}`);
}

/**
 * The tree with `n` stand-in GPUs (a synthetic /proc/driver/nvidia), the first task of its first
 * job holding /dev/nvidia0 as a CUDA process does.
 */
export function withGpuHolder(spec: TreeSpec, n = 1): TreeSpec {
  const nvidia = { gpus: standInGpus(n) };
  const gpu0 = { target: '/dev/nvidia0', dev: nvidiaDevices(nvidia).get('/dev/nvidia0') };
  const jobs = spec.jobs.map((j, i) => {
    if (i !== 0) return j;
    const [first, ...rest] = j.steps[0]?.tasks ?? [];
    const step = {
      ...(j.steps[0] as (typeof j.steps)[number]),
      tasks: [{ ...(first as ProcSpec), links: [gpu0] }, ...rest],
    };
    return { ...j, steps: [step] };
  });
  return { ...spec, jobs, nvidia };
}
