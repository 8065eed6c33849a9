/**
 * A stand-in for iproute2's `rdma` tool (the demo, the tests and the benchmarks use it): an
 * executable shell script that answers `rdma -j statistic qp show|mode` and `rdma -j resource
 * show qp` from JSON files in its directory (shaped exactly as iproute2 prints them) and records
 * every call. `statistic qp set link D/P auto …` is handed to a Node script beside it, which
 * applies it to the mode file, refusing with EBUSY for the links listed in `busy`, as the kernel
 * does while QPs are bound, and with EPERM for every link when a file `denied` exists (no
 * CAP_NET_ADMIN); a turn-on of a link listed in `hang` never answers (until killed). Reading needs
 * only /bin/sh, so the demo runs it where there is no Node (the single executable).
 */
import fs from 'node:fs';
import path from 'node:path';

/** What the demo's observe mode asks (reads), in POSIX sh; `set` goes to SET_SCRIPT, run by `node`. */
const READ_SCRIPT = (node: string): string => `#!/bin/sh
dir=$(dirname "$0")
printf '%s\\n' "$*" >> "$dir/calls.log"
words=
for a in "$@"; do [ "$a" = -j ] || words="\${words:+$words }$a"; done
answer() { if [ -f "$dir/$1" ]; then cat "$dir/$1"; else printf '[]'; fi; }
case "$words" in
  'statistic qp show') answer stat.json ;;
  'resource show qp') answer resource.json ;;
  'statistic qp mode') answer mode.json ;;
  'statistic qp set link '*) exec ${shellQuoted(node)} "$dir/rdma-set.js" "$@" ;;
  *) printf 'rdma: unknown command %s\\n' "$words" >&2; exit 1 ;;
esac
`;

function shellQuoted(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

const SET_SCRIPT = `
const fs = require('node:fs');
const path = require('node:path');
const dir = __dirname;
const args = process.argv.slice(2);
const file = (name, fallback) => { try { return fs.readFileSync(path.join(dir, name), 'utf8'); } catch { return fallback; } };
const words = args.filter((a) => a !== '-j').join(' ');
{
  const link = args[4];
  const busy = file('busy', '').split('\\n').includes(link);
  if (!words.endsWith('auto off') && file('hang', '').split('\\n').includes(link)) {
    setInterval(() => undefined, 60000);
    return;
  }
  if (fs.existsSync(path.join(dir, 'denied'))) {
    process.stderr.write('error: Operation not permitted\\n');
    process.exit(1);
  }
  if (busy && !words.endsWith('auto off')) {
    process.stderr.write('kernel answers: Modifying auto mode is not allowed when there is a bound QP\\nerror: Device or resource busy\\n');
    process.exit(1);
  }
  if (words.includes('optional-counters') && fs.existsSync(path.join(dir, 'no-optional'))) {
    process.stderr.write('Unknown parameter \\'optional-counters\\'\\n');
    process.exit(1);
  }
  fs.appendFileSync(path.join(dir, 'set.log'), args.slice(4).join(' ') + '\\n');
  const modes = JSON.parse(file('mode.json', '[]'));
  for (const m of modes) if (m.ifname + '/' + m.port === link) m.mode = words.endsWith('auto off') ? 'qp auto off' : 'qp auto type,pid on' + (words.includes('optional-counters') ? ' optional-counters on' : '');
  // Written whole and renamed: sets run side by side (a restore turns links off together).
  const tmp = path.join(dir, 'mode.json.' + process.pid);
  fs.writeFileSync(tmp, JSON.stringify(modes));
  fs.renameSync(tmp, path.join(dir, 'mode.json'));
}
`;

export interface QpCounterJson {
  ifname: string;
  port: number;
  cntn: number;
  pid?: number;
  comm?: string;
  counters: Record<string, number>;
  lqpn: number[];
}

export class FakeRdma {
  readonly path: string;

  /** Writes the scripts into `dir` (a fresh directory of its own); `set` runs with `node` (default: this one). */
  constructor(
    readonly dir: string,
    node: string = process.execPath,
  ) {
    this.path = path.join(dir, 'rdma');
    fs.writeFileSync(this.path, READ_SCRIPT(node), { mode: 0o755 });
    fs.writeFileSync(path.join(dir, 'rdma-set.js'), SET_SCRIPT);
  }

  /** The same script run by /bin/sh: for a directory mounted noexec (a container's /tmp). */
  get viaShell(): { readonly path: string; readonly leadingArgs: readonly string[] } {
    return { path: '/bin/sh', leadingArgs: [this.path] };
  }

  /** `rdma -j statistic qp show`: one entry per counter, keys in iproute2's order. */
  counters(list: readonly QpCounterJson[]): void {
    const json = list.map((c, i) => ({
      ifindex: i + 1,
      ifname: c.ifname,
      port: c.port,
      cntn: c.cntn,
      'qp-type': 'RC',
      ...(c.pid === undefined ? {} : { pid: c.pid, comm: c.comm ?? 'python' }),
      ...c.counters,
      lqpn: c.lqpn,
    }));
    fs.writeFileSync(path.join(this.dir, 'stat.json'), JSON.stringify(json));
  }

  /** `rdma -j resource show qp`: QPs of `pid` on a link. */
  resources(list: readonly { ifname: string; port: number; pid?: number; lqpn: number }[]): void {
    const json = list.map((q) => ({
      ifindex: 1,
      ifname: q.ifname,
      port: q.port,
      lqpn: q.lqpn,
      rqpn: q.lqpn + 1000,
      type: 'RC',
      state: 'RTS',
      'rq-psn': 0,
      'sq-psn': 0,
      'path-mig-state': 'MIGRATED',
      pdn: 3,
      ...(q.pid === undefined ? {} : { pid: q.pid, comm: 'python' }),
    }));
    fs.writeFileSync(path.join(this.dir, 'resource.json'), JSON.stringify(json));
  }

  modes(list: readonly { ifname: string; port: number; mode: string }[]): void {
    fs.writeFileSync(path.join(this.dir, 'mode.json'), JSON.stringify(list.map((m, i) => ({ ifindex: i + 1, ...m }))));
  }

  busy(links: readonly string[]): void {
    fs.writeFileSync(path.join(this.dir, 'busy'), links.join('\n'));
  }

  /** Turning these links on never answers: the run hangs until it is killed. */
  hang(links: readonly string[]): void {
    fs.writeFileSync(path.join(this.dir, 'hang'), links.join('\n'));
  }

  /** Every call, one line of arguments each. */
  calls(): string[] {
    return read(path.join(this.dir, 'calls.log'));
  }

  /** The `set` calls that succeeded, from the link on (`mlx5_0/1 auto type,pid on optional-counters on`). */
  sets(): string[] {
    return read(path.join(this.dir, 'set.log'));
  }
}

function read(file: string): string[] {
  try {
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '');
  } catch {
    return [];
  }
}
