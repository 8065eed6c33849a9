/**
 * explain on a node tree that is not this host's (a procfs copied from another node, or the
 * demo's): `--device-table` gives the device numbers its fd links and gres.conf name, and the
 * fds whose device this host does not have are named in warnings instead of passing for idle.
 */
import fs from 'node:fs';
import { Option } from 'commander';
import { parseDeviceTable, tableFdDevice, type DeviceTable } from '../node/read/device-table.js';
import type { Roots } from '../node/read/roots.js';
import type { UnreadableProcess } from '../node/read/unreadable.js';
import { ConfigError } from './common.js';

export function deviceTableOption(): Option {
  return new Option(
    '--device-table <file>',
    'device numbers of the paths the fds and gres.conf name ("major:minor /path" a line), for a tree that is not this host\'s (the demo writes one beside its tree); without it stat on this host tells',
  ).env('IB_SLURM_EXPORTER_DEVICE_TABLE');
}

/** The table named by --device-table, or a configuration error naming the file. */
export function loadDeviceTable(file: string): DeviceTable {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`--device-table ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
  try {
    return parseDeviceTable(text, `--device-table ${file}`);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

/** The roots with the table as the source of fd device numbers. */
export function withDeviceTable(roots: Roots, table: DeviceTable | undefined): Roots {
  return table === undefined ? roots : { ...roots, fdDevice: tableFdDevice(table) };
}

/**
 * One warning per device path that fds name but this host does not have, with the PIDs holding
 * it: their ports are not idle but unknown.
 */
export function missingDeviceWarnings(unreadable: readonly UnreadableProcess[]): string[] {
  const pids = new Map<string, number[]>();
  for (const u of unreadable) if (u.missing !== undefined) pids.set(u.missing, [...(pids.get(u.missing) ?? []), u.pid]);
  return [...pids].map(
    ([link, list]) =>
      `warning: ${link} does not exist on this host, yet fds of PID ${list.join(', ')} name it: this tree is not this host's, so what they hold is unknown (give its device numbers with --device-table; the demo prints the whole command)`,
  );
}
