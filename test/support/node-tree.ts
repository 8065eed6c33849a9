/** A synthetic node tree as the command-line tests use it: its flags, explain on it, a process renamed. */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { TreeRoots } from '../../src/demo/nodetree.js';

export const BIN = path.resolve('dist/src/cli/main.js');

/** The flags that point the node agent (or explain) at a synthetic tree instead of the host's. */
export function treeFlags(roots: TreeRoots): string[] {
  return [
    '--sysfs-root',
    roots.sysfs,
    '--procfs-root',
    roots.procfs,
    '--cgroup-root',
    roots.cgroupfs,
    '--fd-device-table',
    roots.deviceTable,
  ];
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
