/**
 * What stopping an agent is tried against: the built command as a child process, stand-in
 * helper commands (rdma, squeue, scontrol) that hang or daemonize, and servers on loopback that
 * accept and never answer. Shared by the stop tests and the stop benchmark; no test framework
 * here, so the benchmark can use it too.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

// The built command, exactly as users run it (npm test builds first).
export const BIN = path.resolve('dist/src/cli/main.js');

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Date.now() when the exit was seen. */
  readonly atMs: number;
}

export interface AgentChild {
  readonly pid: number;
  readonly exited: Promise<Exit>;
  /** Everything the agent wrote (stdout and stderr) so far. */
  output(): string;
  /** The JSON log lines written so far (other lines skipped). */
  logs(): Array<Record<string, unknown>>;
  /** Whether a log line's `msg` matches. */
  logged(msg: RegExp): boolean;
  /** Resolves as soon as a log line's `msg` matches (from the output itself, no polling); rejects after `ms`. */
  whenLogged(msg: RegExp, ms?: number): Promise<void>;
  /** The `metrics` URL the agent logged at start. */
  metricsUrl(): string | undefined;
  /** Sends a signal; gives Date.now() at the moment it was sent. */
  signal(sig: NodeJS.Signals): number;
  hasExited(): boolean;
}

/** `slurm-otel <args>` from dist/, JSON logs on stderr, killed after `killAfterMs` whatever happens. */
export function spawnAgent(args: readonly string[], killAfterMs = 120_000): AgentChild {
  const child = spawn(process.execPath, [BIN, ...args, '--log-format', 'json'], {
    env: { PATH: process.env.PATH ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const watchers = new Set<() => void>();
  const append = (d: Buffer): void => {
    out += d.toString();
    for (const w of [...watchers]) w();
  };
  child.stdout.on('data', append);
  child.stderr.on('data', append);
  let done = false;
  const exited = new Promise<Exit>((resolve) => {
    child.on('exit', (code, signal) => {
      done = true;
      resolve({ code, signal, atMs: Date.now() });
    });
  });
  const guard = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  void exited.then(() => clearTimeout(guard));
  const logs = (): Array<Record<string, unknown>> =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>];
        } catch {
          return [];
        }
      });
  const logged = (msg: RegExp): boolean => logs().some((l) => typeof l.msg === 'string' && msg.test(l.msg));
  return {
    pid: child.pid ?? -1,
    exited,
    output: () => out,
    logs,
    logged,
    whenLogged: (msg, ms = 30_000) =>
      new Promise<void>((resolve, reject) => {
        const check = (): void => {
          if (!logged(msg)) return;
          watchers.delete(check);
          clearTimeout(late);
          resolve();
        };
        const late = setTimeout(() => {
          watchers.delete(check);
          reject(new Error(`no log line matching ${String(msg)} within ${ms} ms`));
        }, ms);
        watchers.add(check);
        check();
      }),
    metricsUrl: () => {
      const started = logs().find((l) => typeof l.msg === 'string' && / agent started$/.test(l.msg));
      return typeof started?.metrics === 'string' ? started.metrics : undefined;
    },
    signal: (sig) => {
      const at = Date.now();
      child.kill(sig);
      return at;
    },
    hasExited: () => done,
  };
}

/** Whether a process is alive: its /proc entry exists and it is not a zombie (and, given `start`, started then). */
export function alive(pid: number, start?: number): boolean {
  const s = procStat(pid);
  return s !== undefined && s.state !== 'Z' && (start === undefined || s.start === start);
}

/** State, process group and start time (clock ticks since boot, field 22) from /proc/<pid>/stat. */
export function procStat(pid: number): { state: string; pgid: number; start: number } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: f[0] ?? '', pgid: Number(f[2]), start: Number(f[19]) };
  } catch {
    return undefined;
  }
}

/** A process recorded by a stand-in: its pid and start time, which tell it from a later process given the same pid. */
export interface Recorded {
  readonly pid: number;
  readonly start: number;
}

/**
 * A directory of stand-in commands. Every process a stand-in starts writes its pid and start
 * time to `pids` first (with `$D/record`, which records the shell that runs it), so a test can
 * tell which of them outlive the agent, and a clean-up kills only them.
 */
export class StandIns {
  readonly pidFile: string;

  constructor(readonly dir: string) {
    this.pidFile = path.join(dir, 'pids');
    const record = `echo "$PPID $(sed 's/.*) //' /proc/$PPID/stat | cut -d' ' -f20)" >> '${this.pidFile}'`;
    fs.writeFileSync(path.join(dir, 'record'), `#!/bin/sh\n${record}\n`, { mode: 0o755 });
    // A daemon's last stage for DAEMONIZE_TWICE: recorded, then asleep.
    fs.writeFileSync(path.join(dir, 'daemon'), `#!/bin/sh\n'${dir}/record'\nexec sleep 600\n`, { mode: 0o755 });
  }

  /** A `/bin/sh` script `name` whose body runs after recording its pid. */
  script(name: string, body: string): string {
    const file = path.join(this.dir, name);
    fs.writeFileSync(file, `#!/bin/sh\nD='${this.dir}'\n"$D/record"\n${body}\n`, { mode: 0o755 });
    return file;
  }

  /** The processes recorded so far. */
  recorded(): Recorded[] {
    return this.lines('pids').map((l) => {
      const [pid, start] = l.split(' ').map(Number);
      return { pid: pid ?? 0, start: start ?? 0 };
    });
  }

  /** The pids recorded so far. */
  pids(): number[] {
    return this.recorded().map((r) => r.pid);
  }

  /** The lines of a file in the directory ([] when it does not exist yet). */
  lines(name: string): string[] {
    try {
      return fs
        .readFileSync(path.join(this.dir, name), 'utf8')
        .split('\n')
        .filter((l) => l !== '');
    } catch {
      return [];
    }
  }

  /** The recorded processes still alive (a later process given the same pid is not one). */
  survivors(): number[] {
    return this.recorded()
      .filter((r) => alive(r.pid, r.start))
      .map((r) => r.pid);
  }

  /**
   * Kills whatever recorded is still alive, with the process groups they still lead (cleanup).
   * A pid whose process has another start time was given to someone else: left alone, and so is
   * the group it leads.
   */
  killAll(): void {
    for (const r of this.recorded()) {
      const s = procStat(r.pid);
      if (s === undefined || s.start !== r.start) continue;
      for (const target of s.pgid === r.pid ? [-r.pid, r.pid] : [r.pid]) {
        try {
          process.kill(target, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
    }
  }
}

/**
 * Shell that starts a grandchild in a session of its own (out of the run's process group) which
 * keeps the run's stdout open: the way a daemonizing helper wedges whoever waits for its output.
 * It returns once the grandchild has left the group (has recorded its pid), at most 5 s later.
 */
export const DAEMONIZE = [
  'n0=$(wc -l < "$D/pids")',
  `setsid sh -c '"$0"; exec sleep 600' "$D/record" &`,
  'i=0; while [ "$(wc -l < "$D/pids")" -le "$n0" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done',
].join('\n');

/**
 * Shell that daemonizes as daemon(3) does: a child in a session of its own forks the daemon and
 * exits, and neither keeps the run's output (stdin, stdout and stderr on /dev/null), so no pipe
 * leads to them. It returns once both have recorded themselves, at most 5 s later.
 */
export const DAEMONIZE_TWICE = [
  'n0=$(wc -l < "$D/pids")',
  `setsid sh -c '"$0"; "$1" & exit 0' "$D/record" "$D/daemon" </dev/null >/dev/null 2>&1 &`,
  'i=0; while [ "$(wc -l < "$D/pids")" -le "$((n0 + 1))" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done',
].join('\n');

/** A TCP server on 127.0.0.1 that accepts connections and never answers. */
export interface SilentServer {
  readonly port: number;
  readonly url: string;
  /** Connections accepted so far. */
  accepted(): number;
  close(): Promise<void>;
}

export async function silentServer(): Promise<SilentServer> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const server = net.createServer((s) => {
    accepted++;
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    accepted: () => accepted,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * `rdma` answering `statistic qp mode` with `links` in `qp auto off`, the reads with empty lists,
 * and recording each `statistic qp set` in set.log; `onSet` (shell) then runs for the calls
 * turning a link off (`$5` is the link).
 */
export function manageRdma(s: StandIns, links: readonly string[], onSetOff: string): string {
  const modes = links.map((l) => {
    const [ifname, port] = l.split('/');
    return { ifname, port: Number(port), mode: 'qp auto off' };
  });
  fs.writeFileSync(path.join(s.dir, 'mode.json'), JSON.stringify(modes));
  return s.script(
    'rdma',
    [
      'case "$*" in',
      '  *"statistic qp mode"*) cat "$D/mode.json" ;;',
      '  *"qp set link"*"auto off"*) echo "$5 off" >> "$D/set.log"; ' + onSetOff + ' ;;',
      '  *"qp set link"*) echo "$5 on" >> "$D/set.log" ;;',
      '  *) echo "[]" ;;',
      'esac',
    ].join('\n'),
  );
}
