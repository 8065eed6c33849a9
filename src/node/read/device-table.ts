/**
 * A table of device numbers by path, for a node tree that is not this host's: a procfs copied
 * from another node, or the demo's synthetic one. Its fd links are plain symlinks whose targets
 * (`/dev/infiniband/uverbs0`, `/dev/nvidia0`) need not exist here, so stat cannot tell what they
 * are; the table says, one device a line:
 *
 *     231:192 /dev/infiniband/uverbs0
 *
 * (the number as sysfs `dev` files write it, a blank, then the path to the end of the line; `#`
 * starts a comment line). A path names one device.
 */
import { DEV_RE, type FdDeviceOf } from './roots.js';

/** Path → `major:minor`. */
export type DeviceTable = ReadonlyMap<string, string>;

/** The table's text: one line per device, sorted by path so that two writes of one tree are equal. */
export function formatDeviceTable(devices: DeviceTable): string {
  const lines = [...devices].sort(([a], [b]) => a.localeCompare(b)).map(([p, dev]) => `${dev} ${p}\n`);
  return `# device numbers of the paths this tree's fds and gres.conf name (major:minor path)\n${lines.join('')}`;
}

/** Parses a table; throws an Error naming the first bad line (`what`: the file, for the message). */
export function parseDeviceTable(text: string, what: string): DeviceTable {
  const out = new Map<string, string>();
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const space = line.search(/\s/);
    const dev = space < 0 ? line : line.slice(0, space);
    const file = space < 0 ? '' : line.slice(space).trim();
    if (!DEV_RE.test(dev) || !file.startsWith('/'))
      throw new Error(`${what} line ${i + 1}: expected "major:minor /path", got ${JSON.stringify(raw.slice(0, 80))}`);
    const known = out.get(file);
    if (known !== undefined && known !== dev)
      throw new Error(`${what} line ${i + 1}: ${file} has two device numbers (${known}, ${dev})`);
    out.set(file, dev);
  });
  return out;
}

/** An fd's device from the table, by its link text; a path the table does not list is no device. */
export function tableFdDevice(table: DeviceTable): FdDeviceOf {
  return (_fdPath, linkText) => table.get(linkText);
}
