/**
 * Daemon footprint benchmark: an agent run as users run it (a process of its own, on its own
 * schedule, its endpoints on loopback) for N cycles, watched from outside. Prints:
 *   runtime      the agent's Node (process.version, from its start-up log) and V8's heap limit
 *   RSS peak     the kernel's high-water mark (VmHWM of /proc/<pid>/status), and the largest
 *                VmRSS sampled every 250 ms
 *   CPU          utime + stime (/proc/<pid>/stat) from the end of the first cycle to the end,
 *                per hour of that time (the steady cost), and in all (start-up and first cycle in)
 *   stall        the longest event-loop delay the agent reports on its self-monitoring endpoint
 *                (nodejs_eventloop_delay_max_seconds, a window per scrape). Both endpoints are
 *                scraped once per collection interval, as Prometheus would, and every second until
 *                the first cycle is counted: a scrape costs the agent CPU, and one a second would
 *                count the bench's load as the agent's.
 *   files open   at the end: the node agent keeps its counter files open, and the kernel keeps a
 *                page (4.4 KiB measured) for each one read, charged to the agent's cgroup
 *
 * Each agent gets the Environment= lines of its shipped systemd unit (deploy/systemd/), as there.
 * --agent node (default): the node agent on the benches' heavy node (bench/heavy-node.ts: 8 HCAs
 *   × 2 ports, 64 jobs, 600 job processes × 256 fds, 200 others), given real device nodes, so
 *   the agent finds holders by stat as on a node (needs root). Default intervals are the agent's:
 *   --collection-interval 15s, --fd-rescan-interval 60s; 8 cycles (2 minutes).
 * --agent node-exporter: the baseline, node_exporter's infiniband collector alone on the same
 *   sysfs, scraped at the same interval (it reads when scraped).
 * --agent cluster: the cluster agent against the fake slurmrestd of bench/cluster-collect.ts
 *   (20,000 nodes, 100,000 jobs, v0.0.44), run in a child of its own; default interval 30s,
 *   3 collections.
 *
 * The runtime: --exe FILE runs the single executable (scripts/sea/build.sh makes
 * dist/sea/slurm-otel; it takes no flags from outside, NODE_OPTIONS included); otherwise
 * --node FILE (default: the Node running this bench) runs dist/src/cli/main.js, with any
 * --node-flag FLAG (repeatable) before it: the way to try V8 flags before the executable sets them.
 *
 * Run: npm run build && node dist/bench/daemon.js [--agent node|cluster] [--exe FILE | --node FILE
 *      [--node-flag FLAG]...] [--cycles N] [--collection-interval D] [--fd-rescan-interval D]
 *      [--tree DIR] [--page-cache kept] [--main FILE] [--progress N] [--fd-reader native|fs]
 * --main FILE: the agent's main script for --node runs (default this checkout's
 * dist/src/cli/main.js); another checkout's build, to compare before and after on one Node.
 * --page-cache kept: leave the program's file in the page cache as it is. By default the bench
 * first drops it (`dd iflag=nocache`), as on a node after a reboot: the file-backed part of the
 * RSS depends on what the cache held (the same executable showed 65-70 MiB of it in runs right
 * after a build, 51-52 MiB in every run once its cache had been dropped), so runs compare only
 * from the same state.
 * --tree DIR: the heavy node is written there once and reused by later runs (it takes minutes
 * to write on a loaded machine); without it, a temporary tree is written and removed.
 * --fd-reader fs: the node agent reads fd tables through Node's fs (its --fd-reader; default native).
 * --progress N: a line every N cycles (minutes since the start, VmHWM, VmRSS as anonymous +
 * file-backed, V8's heap), to see over a long run whether the peak still climbs.
 */
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeTree } from '../src/demo/nodetree.js';
import { treeFlags } from '../test/support/node-tree.js';
import { HEAVY_NODE, heavyTree, nodeTreeDir } from './heavy-node.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = path.join(ROOT, 'dist/src/cli/main.js');
const SAMPLE_MS = 250;
const SCRAPE_MS = 1000;
/** Start-up allowance beyond the cycles themselves (the cluster's first collection included). */
const START_LIMIT_MS = 180_000;
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

interface Args {
  readonly agent: 'node' | 'cluster' | 'node-exporter';
  readonly exe?: string;
  readonly node: string;
  readonly nodeFlags: readonly string[];
  /** The agent's main script for --node runs. */
  readonly main: string;
  readonly cycles: number;
  readonly interval: string;
  readonly rescan: string;
  /** The node agent's --fd-reader. */
  readonly fdReader: 'native' | 'fs';
  readonly tree?: string;
  /** Whether the program's file keeps its page cache (else it is dropped before the start). */
  readonly keepPageCache: boolean;
  /** A progress line every this many cycles (0: none). */
  readonly progress: number;
}

function parseArgs(argv: readonly string[]): Args {
  const value = (name: string): string | undefined => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const nodeFlags = argv.flatMap((a, i) => (a === '--node-flag' && argv[i + 1] ? [argv[i + 1] as string] : []));
  const agent = (['cluster', 'node-exporter'] as const).find((x) => x === value('--agent')) ?? 'node';
  const exe = value('--exe');
  if (exe && nodeFlags.length > 0) throw new Error('--node-flag applies to --node only: the executable takes none');
  return {
    agent,
    ...(exe ? { exe: path.resolve(exe) } : {}),
    node: value('--node') ?? process.execPath,
    nodeFlags,
    main: path.resolve(value('--main') ?? CLI),
    cycles: Number(value('--cycles') ?? (agent === 'cluster' ? 3 : 8)),
    interval: value('--collection-interval') ?? (agent === 'cluster' ? '30s' : '15s'),
    rescan: value('--fd-rescan-interval') ?? '60s',
    fdReader: value('--fd-reader') === 'fs' ? 'fs' : 'native',
    ...(value('--tree') ? { tree: path.resolve(value('--tree') as string) } : {}),
    keepPageCache: value('--page-cache') === 'kept',
    progress: Number(value('--progress') ?? 0),
  };
}

function seconds(duration: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(duration);
  if (!m) throw new Error(`not a duration: ${duration}`);
  return Number(m[1]) * ({ ms: 0.001, s: 1, m: 60 } as Record<string, number>)[m[2] as string]!;
}

// ------------------------------------------------------------------ what /proc says of the agent

interface Memory {
  readonly rss: number;
  readonly hwm: number;
  /** RSS by kind: anonymous (heap, stacks) and file-backed (the executable's own pages: clean, shared). */
  readonly anon: number;
  readonly file: number;
}

/** VmRSS, VmHWM, RssAnon and RssFile in bytes. */
function memory(pid: number): Memory | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM'), anon: kb('RssAnon'), file: kb('RssFile') };
  } catch {
    return undefined;
  }
}

/** utime + stime in seconds (fields 14 and 15; counted after the command name's closing parenthesis). */
function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

// ------------------------------------------------------------------ the agent

interface Started {
  readonly child: ChildProcess;
  /** The last 20 kB of its stderr. */
  readonly log: () => string;
  readonly facts: { node: string; heap_limit_mib: number; metrics: string; monitoring: string };
}

/**
 * Drops the page cache of the program's file (unless --page-cache kept), so that its file-backed
 * RSS counts the pages it touches rather than how much of the file the cache held; pages other
 * running processes map stay.
 */
function dropPageCache(a: Args, file: string): void {
  if (a.keepPageCache) return;
  execFileSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
}

/** The `Environment=` lines of a shipped systemd unit (deploy/systemd/), as the unit runs the agent. */
function unitEnvironment(unit: string): Record<string, string> {
  const file = path.join(ROOT, 'deploy/systemd', unit);
  const env: Record<string, string> = {};
  for (const m of fs.readFileSync(file, 'utf8').matchAll(/^Environment=([A-Z_][A-Z0-9_]*)=(.*)$/gm))
    env[m[1] as string] = m[2] as string;
  console.log(
    `environment, from ${unit}: ${Object.entries(env)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  );
  return env;
}

/** Starts the agent and waits for its start-up log line (JSON), which names its runtime and URLs. */
async function startAgent(a: Args, agentArgs: readonly string[], unit: string): Promise<Started> {
  const [cmd, args] = a.exe ? [a.exe, agentArgs] : [a.node, [...a.nodeFlags, a.main, ...agentArgs]];
  dropPageCache(a, cmd);
  const env = { PATH: process.env.PATH ?? '', ...unitEnvironment(unit) };
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
  let log = '';
  const facts = await new Promise<Started['facts']>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no start-up line in ${START_LIMIT_MS} ms:\n${log}`)),
      START_LIMIT_MS,
    );
    child.once('exit', (code) => reject(new Error(`the agent exited with ${code}:\n${log}`)));
    child.stderr?.on('data', (d: Buffer) => {
      log = (log + d.toString()).slice(-20_000);
      const line = log.split('\n').find((l) => l.includes(' started"'));
      if (line) {
        clearTimeout(timer);
        resolve(JSON.parse(line) as Started['facts']);
      }
    });
  });
  child.removeAllListeners('exit');
  return { child, facts, log: () => log };
}

/** A sample's value in an exposition (the first series of the family), or undefined. */
function sampleOf(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

async function scrape(url: string): Promise<string> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    return await res.text();
  } catch {
    return '';
  }
}

interface Figures {
  readonly hwm: number;
  readonly rssMax: number;
  /** The sample with the largest VmRSS. */
  readonly atMax: Memory | undefined;
  readonly cpuSteady: number;
  readonly steadySeconds: number;
  readonly cpuAll: number;
  readonly stallMax: number;
  readonly cycles: number;
  readonly heapTotalMax: number;
  readonly heapUsedMax: number;
  /** The last scrape's GC pauses: count and seconds, by kind. */
  readonly gc: string;
  /** Files the agent holds open at the end (the node agent keeps its counter files open). */
  readonly fds: number;
}

/**
 * Watches the agent until `cycles` cycles are counted (`counter` on its monitoring or metrics
 * endpoint) or the deadline passes; CPU per hour counts from the end of the first cycle.
 */
async function watch(s: Started, a: Args, counter: string): Promise<Figures> {
  const pid = s.child.pid as number;
  const deadline = Date.now() + START_LIMIT_MS + a.cycles * seconds(a.interval) * 2000;
  let rssMax = 0;
  let stallMax = 0;
  let cycles = 0;
  let first: { cpu: number; at: number } | undefined;
  let scrapedAt = -Infinity;
  let [heapTotalMax, heapUsedMax, gc] = [0, 0, ''];
  let atMax: Memory | undefined;
  const startedAt = performance.now();
  const sampler = setInterval(() => {
    const m = memory(pid);
    if (m && m.rss > rssMax) [rssMax, atMax] = [m.rss, m];
  }, SAMPLE_MS);
  try {
    while (cycles < a.cycles && Date.now() < deadline && s.child.exitCode === null && s.child.signalCode === null) {
      await new Promise((r) => setTimeout(r, SCRAPE_MS));
      if (first && performance.now() - scrapedAt < seconds(a.interval) * 1000) continue;
      scrapedAt = performance.now();
      const monitoring = await scrape(`${s.facts.monitoring}/metrics`);
      stallMax = Math.max(stallMax, sampleOf(monitoring, 'nodejs_eventloop_delay_max_seconds') ?? 0);
      heapTotalMax = Math.max(heapTotalMax, sampleOf(monitoring, 'nodejs_heap_size_total_bytes') ?? 0);
      heapUsedMax = Math.max(heapUsedMax, sampleOf(monitoring, 'nodejs_heap_size_used_bytes') ?? 0);
      gc = gcPauses(monitoring) || gc;
      // The metrics endpoint too, as Prometheus scrapes it; the count is there where the monitoring
      // one lacks it.
      const metrics = await scrape(`${s.facts.metrics}/metrics`);
      const count = sampleOf(monitoring, counter) ?? sampleOf(metrics, counter);
      if (a.progress > 0 && count !== undefined && Math.floor(count / a.progress) > Math.floor(cycles / a.progress))
        progress(pid, count, startedAt, monitoring);
      cycles = count ?? cycles;
      if (cycles >= 1 && !first) first = { cpu: cpuSeconds(pid), at: performance.now() };
    }
  } finally {
    clearInterval(sampler);
  }
  if (s.child.exitCode !== null || s.child.signalCode !== null)
    throw new Error(
      `the agent ended after ${cycles} cycles (status ${s.child.exitCode}, signal ${s.child.signalCode}); its log ends:\n${s.log().slice(-3000)}`,
    );
  const cpuAll = cpuSeconds(pid);
  const steadySeconds = first ? (performance.now() - first.at) / 1000 : 0;
  const hwm = memory(pid)?.hwm ?? 0;
  const cpuSteady = first ? cpuAll - first.cpu : 0;
  const fds = fs.readdirSync(`/proc/${pid}/fd`).length;
  return { hwm, rssMax, atMax, cpuSteady, steadySeconds, cpuAll, stallMax, cycles, heapTotalMax, heapUsedMax, gc, fds };
}

/** One line of a long run: where the peak and the pages stand after `cycles` cycles. */
function progress(pid: number, cycles: number, startedAt: number, monitoring: string): void {
  const m = memory(pid);
  if (!m) return;
  const heap = (name: string): string => mb(sampleOf(monitoring, name) ?? 0);
  const minutes = ((performance.now() - startedAt) / 60_000).toFixed(1);
  console.log(
    `  cycle ${cycles}, ${minutes} min: VmHWM ${mb(m.hwm)}, VmRSS ${mb(m.rss)} (${mb(m.anon)} anonymous + ${mb(m.file)} file-backed), V8 heap ${heap('nodejs_heap_size_total_bytes')} (${heap('nodejs_heap_size_used_bytes')} used)`,
  );
}

/** GC pauses by kind from an exposition's nodejs_gc_duration_seconds: "minor 120 × 0.31 s, …". */
function gcPauses(text: string): string {
  const kinds = [...text.matchAll(/^nodejs_gc_duration_seconds_count\{kind="(\w+)"\} (\S+)/gm)];
  return kinds
    .map(([, kind, count]) => {
      const sum = new RegExp(`^nodejs_gc_duration_seconds_sum\\{kind="${kind}"\\} (\\S+)`, 'm').exec(text)?.[1];
      return `${kind} ${count} × ${Number(sum ?? 0).toFixed(2)} s`;
    })
    .join(', ');
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}

function mb(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(0)} MiB`;
}

function report(a: Args, s: Started, f: Figures): void {
  const runtime = a.exe
    ? `single executable ${path.relative(process.cwd(), a.exe)}`
    : `${a.node} ${a.nodeFlags.join(' ')} ${path.relative(process.cwd(), a.main)}`;
  console.log(`runtime: Node ${s.facts.node} (${runtime.trim()}), V8 heap limit ${s.facts.heap_limit_mib} MiB`);
  console.log(
    `cycles: ${f.cycles} at ${a.interval}${a.agent === 'node' ? `, fd rescan ${a.rescan}, fd reader ${a.fdReader}` : ''}`,
  );
  console.log(`page cache of the program's file: ${a.keepPageCache ? 'kept as it was' : 'dropped before the start'}`);
  const split = f.atMax ? ` = ${mb(f.atMax.anon)} anonymous + ${mb(f.atMax.file)} file-backed` : '';
  console.log(`RSS peak: ${mb(f.hwm)} (VmHWM); largest sampled VmRSS ${mb(f.rssMax)}${split}`);
  const perHour = f.steadySeconds > 0 ? (f.cpuSteady / f.steadySeconds) * 3600 : NaN;
  console.log(
    `CPU: ${perHour.toFixed(0)} s per hour after the first cycle (${f.cpuSteady.toFixed(2)} s in ${f.steadySeconds.toFixed(0)} s); ${f.cpuAll.toFixed(2)} s in all`,
  );
  console.log(`V8 heap: total up to ${mb(f.heapTotalMax)}, used up to ${mb(f.heapUsedMax)} (per scrape); GC ${f.gc}`);
  console.log(`longest event-loop stall: ${(f.stallMax * 1000).toFixed(0)} ms`);
  // Outside the RSS: the kernel keeps a page for each open sysfs or procfs file once read.
  console.log(`files open at the end: ${f.fds}`);
}

// ------------------------------------------------------------------ the two agents

/**
 * The heavy node's root flags: written into a temporary directory, or with --tree DIR once into
 * DIR and reused by later runs (writing it and its device nodes takes minutes on a loaded machine).
 */
function heavyNodeFlags(a: Args): { flags: string[]; dir: string; keep: boolean } {
  if (!a.tree) {
    const dir = nodeTreeDir('slurm-otel-bench-daemon-');
    return { flags: treeFlags(writeTree(dir, heavyTree(HEAVY_NODE))), dir, keep: false };
  }
  const done = path.join(a.tree, 'flags.json');
  if (!fs.existsSync(done)) {
    fs.rmSync(a.tree, { recursive: true, force: true });
    fs.mkdirSync(a.tree, { recursive: true });
    fs.writeFileSync(done, JSON.stringify(treeFlags(writeTree(a.tree, heavyTree(HEAVY_NODE)))));
  }
  return { flags: JSON.parse(fs.readFileSync(done, 'utf8')) as string[], dir: a.tree, keep: true };
}

async function nodeAgent(a: Args): Promise<void> {
  const tree = heavyNodeFlags(a);
  try {
    console.log(
      `tree: ${HEAVY_NODE.hcas} HCAs × ${HEAVY_NODE.portsPerHca} ports, ${HEAVY_NODE.jobs} jobs, ${HEAVY_NODE.jobProcesses} job processes × ${HEAVY_NODE.fdsPerProcess} fds, ${HEAVY_NODE.otherProcesses} others`,
    );
    const s = await startAgent(
      a,
      [
        'node',
        ...tree.flags,
        ...['--collection-interval', a.interval, '--fd-rescan-interval', a.rescan],
        ...['--fd-reader', a.fdReader],
        ...['--metrics-bind-address', '127.0.0.1:0', '--monitoring-bind-address', '127.0.0.1:0'],
        ...['--log-format', 'json'],
      ],
      'slurm-otel-node.service',
    );
    try {
      report(a, s, await watch(s, a, 'ib_slurm_exporter_cycles_total'));
    } finally {
      await stop(s.child);
    }
  } finally {
    if (!tree.keep) fs.rmSync(tree.dir, { recursive: true, force: true });
  }
}

/**
 * The baseline: Prometheus's node_exporter (Debian's prometheus-node-exporter) with only its
 * infiniband collector, on the same sysfs, scraped every --collection-interval (it reads sysfs
 * when scraped) --cycles times.
 */
async function nodeExporter(a: Args): Promise<void> {
  const tree = heavyNodeFlags(a);
  const exe = '/usr/bin/prometheus-node-exporter';
  const sysfs = tree.flags[tree.flags.indexOf('--sysfs-root') + 1] as string;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/metrics`;
  if (!fs.existsSync(exe)) throw new Error(`no ${exe}: apt-get install prometheus-node-exporter`);
  dropPageCache(a, exe);
  const listen = `--web.listen-address=127.0.0.1:${port}`;
  const child = spawn(
    exe,
    ['--collector.disable-defaults', '--collector.infiniband', `--path.sysfs=${sysfs}`, listen],
    {
      stdio: 'ignore',
    },
  );
  try {
    const version = execFileSync(exe, ['--version'], { encoding: 'utf8' }).split('\n')[0];
    const pid = child.pid as number;
    let rssMax = 0;
    let first: { cpu: number; at: number } | undefined;
    let scrapes = 0;
    for (let i = 0; i < a.cycles * 2 + 60 && scrapes < a.cycles; i++) {
      const text = await scrape(url);
      if (text.includes('node_infiniband_')) {
        scrapes++;
        first ??= { cpu: cpuSeconds(pid), at: performance.now() };
      }
      rssMax = Math.max(rssMax, memory(pid)?.rss ?? 0);
      if (scrapes < a.cycles) await new Promise((r) => setTimeout(r, scrapes > 0 ? seconds(a.interval) * 1000 : 500));
    }
    const cpu = cpuSeconds(pid) - (first?.cpu ?? 0);
    const took = first ? (performance.now() - first.at) / 1000 : 0;
    const hwm = memory(pid)?.hwm ?? 0;
    console.log(`runtime: ${version} (infiniband collector only)`);
    console.log(`scrapes: ${scrapes} at ${a.interval}`);
    console.log(
      `RSS peak: ${(hwm / 2 ** 20).toFixed(0)} MiB (VmHWM); largest sampled VmRSS ${(rssMax / 2 ** 20).toFixed(0)} MiB`,
    );
    console.log(
      `CPU: ${((cpu / took) * 3600).toFixed(0)} s per hour after the first scrape (${cpu.toFixed(2)} s in ${took.toFixed(0)} s)`,
    );
  } finally {
    await stop(child);
    if (!tree.keep) fs.rmSync(tree.dir, { recursive: true, force: true });
  }
}

/** A free loopback port (closed again; the exporter binds it next). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** The fake slurmrestd of cluster-collect.ts, in a child with Node's default flags. */
async function fakeSlurmrestd(): Promise<{ child: ChildProcess; url: string }> {
  const child = fork(path.join(path.dirname(fileURLToPath(import.meta.url)), 'cluster-collect.js'), ['--server'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the fake slurmrestd exited with ${code}`)));
    child.on('message', (m: { type: string; url?: string }) => m.type === 'ready' && resolve(m.url as string));
  });
  child.removeAllListeners('exit');
  return { child, url };
}

async function clusterAgent(a: Args): Promise<void> {
  const server = await fakeSlurmrestd();
  try {
    console.log('cluster: 20,000 nodes, 100,000 jobs (fake slurmrestd, v0.0.44)');
    const s = await startAgent(
      a,
      [
        'cluster',
        ...['--cluster-name', 'bench', '--slurm-api-server', server.url, '--token-source', 'none'],
        ...['--collection-interval', a.interval],
        ...['--metrics-bind-address', '127.0.0.1:0', '--monitoring-bind-address', '127.0.0.1:0'],
        ...['--log-format', 'json'],
      ],
      'slurm-otel-cluster.service',
    );
    try {
      report(a, s, await watch(s, a, 'slurm_exporter_collection_attempts_total'));
    } finally {
      await stop(s.child);
    }
  } finally {
    server.child.disconnect();
    server.child.kill('SIGTERM');
  }
}

const args = parseArgs(process.argv.slice(2));
const benches = { node: nodeAgent, cluster: clusterAgent, 'node-exporter': nodeExporter };
await benches[args.agent](args);
