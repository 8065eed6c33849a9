/**
 * A stand-in for iproute2's `rdma` tool that the demo runs (the tests and the benchmarks too): a
 * POSIX sh script that answers `rdma -j statistic qp show|mode` and `rdma -j resource show qp`
 * from JSON files in its directory (shaped exactly as iproute2 prints them), so it runs where
 * there is no Node (the single executable). `statistic qp set …` goes to an executable `rdma-set`
 * beside it when there is one; without one it is refused as the real tool refuses it without
 * CAP_NET_ADMIN. Calls are appended to `calls.log` when that file exists.
 */
import fs from 'node:fs';
import path from 'node:path';

const SCRIPT = `#!/bin/sh
dir=$(dirname "$0")
[ -f "$dir/calls.log" ] && printf '%s\\n' "$*" >> "$dir/calls.log"
words=
for a in "$@"; do [ "$a" = -j ] || words="\${words:+$words }$a"; done
answer() { if [ -f "$dir/$1" ]; then cat "$dir/$1"; else printf '[]'; fi; }
case "$words" in
  'statistic qp show') answer stat.json ;;
  'resource show qp') answer resource.json ;;
  'statistic qp mode') answer mode.json ;;
  'statistic qp set '*)
    [ -x "$dir/rdma-set" ] && exec "$dir/rdma-set" "$@"
    printf 'error: Operation not permitted\\n' >&2; exit 1 ;;
  *) printf 'rdma: unknown command %s\\n' "$words" >&2; exit 1 ;;
esac
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

  /** Writes the script into `dir` (a fresh directory of its own). */
  constructor(readonly dir: string) {
    this.path = path.join(dir, 'rdma');
    fs.writeFileSync(this.path, SCRIPT, { mode: 0o755 });
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
}
