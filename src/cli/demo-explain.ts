/**
 * `slurm-otel explain` on the demo's tree, exactly as the demo's node agent reads it: its three
 * roots, the table of device numbers its fd links name (a synthetic procfs's links reach no
 * device on this host), and its stand-in slurmd and scontrol for Slurm's GPU allocation.
 */
import fs from 'node:fs';
import path from 'node:path';
import { formatDeviceTable } from '../node/read/device-table.js';
import type { Roots } from '../node/read/roots.js';

/** Where the demo writes its device table, in its directory beside sys, proc and cgroup. */
export const DEMO_DEVICE_TABLE = 'device-table';

export interface DemoTreeForExplain {
  readonly dir: string;
  readonly roots: Roots;
  /** The tree's device numbers by path (its fd link texts, gres.conf's File= paths). */
  readonly devices: ReadonlyMap<string, string>;
  /** The stand-in for slurmd -G and scontrol show job -d (one script answers both). */
  readonly slurmTool: string;
  readonly nodeName: string;
}

/** Writes the device table into the demo's directory and returns explain's arguments for the tree. */
export function demoExplainArgs(t: DemoTreeForExplain): string[] {
  const table = path.join(t.dir, DEMO_DEVICE_TABLE);
  fs.writeFileSync(table, formatDeviceTable(t.devices));
  return [
    ...['--sysfs-root', t.roots.sysfs, '--procfs-root', t.roots.procfs, '--cgroup-root', t.roots.cgroupfs],
    ...['--device-table', table],
    ...['--gpu-allocation', 'slurm', '--slurmd-path', t.slurmTool, '--scontrol-path', t.slurmTool],
    ...['--node-name', t.nodeName],
  ];
}

/** A word as a POSIX shell reads it back: bare when safe, else single-quoted. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * How to run this command again from the same shell: `node <script>` when run as a script (a
 * path relative to the working directory when it lies below it), else the executable itself (the
 * single executable).
 */
export function selfCommand(argv: readonly string[], execPath: string, cwd: string): string {
  const script = argv[1];
  if (script === undefined || !script.endsWith('.js')) return shellWord(execPath);
  const rel = path.relative(cwd, script);
  return `node ${shellWord(rel.startsWith('..') || path.isAbsolute(rel) ? script : rel)}`;
}
