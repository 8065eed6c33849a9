/**
 * A/B of the member picker over whole collections: 20,000 nodes and 100,000 jobs (v0.0.44 shapes
 * with `job_resources`, ~540 MB of /jobs), read by a real ClusterRunner (nodes, jobs, diag;
 * controller source) through the real client, once per arm and round, in one process:
 *   picker  the member picker (member-picker.ts): only the members a job decoder reads are parsed
 *   none    no picker: every job element parsed whole
 * The arms alternate, in a rotated order each round, each with a runner of its own (so each has
 * its own warm caches). The fake slurmrestd runs in a child process, as in cluster-collect.ts: its
 * rendering costs neither the agent's event loop nor its CPU time.
 * Prints each collection's wall and CPU time, then per arm the median of the warm rounds (all
 * but the first) and what the picker saves. (A WebAssembly scanner was measured here against the
 * JavaScript one and removed: on a quiet machine it saved nothing, -5 % and -6 %.)
 *
 * Run: npm run build && node dist/bench/member-picker-ab.js [--rounds N (5)]
 */
import { fork, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { ClusterRunner } from '../src/cluster/agent.js';
import { noAuth } from '../src/cluster/api/http/auth.js';
import { SlurmClient } from '../src/cluster/api/client.js';
import { useMemberPicker, type PickerKind } from '../src/json/member-picker.js';
import { startFakeSlurmrestd } from '../src/demo/fake-slurmrestd.js';
import { bigCluster } from '../test/support/big-cluster.js';
import { silentLogger } from '../test/support/log.js';
import { median, sayRuntime } from './stats.js';

const NODES = 20_000;
const JOBS = 100_000;
const VERSION = 'v0.0.44';

async function serverMain(): Promise<void> {
  const cluster = bigCluster({ nodes: NODES, jobs: JOBS, seed: 1 });
  const server = await startFakeSlurmrestd({ cluster, versions: [VERSION], host: '127.0.0.1', port: 0 });
  process.send?.({ url: server.url });
  process.on('disconnect', () => void server.close().finally(() => process.exit(0)));
}

function startServer(): Promise<{ child: ChildProcess; url: string }> {
  const child = fork(fileURLToPath(import.meta.url), ['--server'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [],
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`server child exited with ${code}`)));
    child.once('message', (m: { url: string }) => resolve({ child, url: m.url }));
  });
}

function runner(url: string): ClusterRunner {
  const api = new SlurmClient({
    server: url,
    tokenSource: noAuth(),
    apiVersion: VERSION,
    requestTimeoutMs: 600_000,
    retries: 0,
    logger: silentLogger(),
  });
  return new ClusterRunner({
    source: { api, jobSource: 'controller', accountingLookbackMs: 3_600_000 },
    collectionIntervalMs: 3_600_000,
    maxInflight: 1,
    metrics: { host: '127.0.0.1', port: 0 },
    monitoring: { host: '127.0.0.1', port: 0 },
    resource: { serviceName: 'slurm-otel-cluster', serviceVersion: 'bench', hostName: 'bench' },
    logger: silentLogger(),
    close: () => api.close(),
  });
}

const cpuNow = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 ? (process.argv[i + 1] as string) : dflt;
}

/** One collection with the arm's picker: wall and CPU time (ms) and the jobs decoded. */
async function collectWith(kind: PickerKind, r: ClusterRunner): Promise<{ ms: number; cpuMs: number; jobs: number }> {
  useMemberPicker(kind);
  const [t0, c0] = [performance.now(), cpuNow()];
  const tick = await r.collect();
  const [ms, cpuMs] = [performance.now() - t0, cpuNow() - c0];
  if (tick.failed.length > 0) throw new Error(`collection failed (${kind}): ${tick.failed.join(', ')}`);
  return { ms, cpuMs, jobs: tick.snapshot.jobs?.value.length ?? 0 };
}

async function main(): Promise<void> {
  const rounds = Number(arg('--rounds', '5'));
  const arms: PickerKind[] = ['picker', 'none'];
  const { child, url } = await startServer();
  console.log(`fake slurmrestd (child process): ${NODES} nodes, ${JOBS} jobs at ${url}; arms ${arms.join(', ')}`);
  const runners = new Map(arms.map((a) => [a, runner(url)]));
  const wall = new Map<PickerKind, number[]>(arms.map((a) => [a, []]));
  const cpu = new Map<PickerKind, number[]>(arms.map((a) => [a, []]));
  try {
    for (let round = 0; round < rounds; round++) {
      const order = arms.map((_, i) => arms[(i + round) % arms.length] as PickerKind);
      const line: string[] = [];
      for (const arm of order) {
        const c = await collectWith(arm, runners.get(arm) as ClusterRunner);
        wall.get(arm)?.push(c.ms);
        cpu.get(arm)?.push(c.cpuMs);
        line.push(`${arm} ${seconds(c.ms)} (CPU ${seconds(c.cpuMs)}, ${c.jobs} jobs)`);
      }
      console.log(`round ${round + 1}${round === 0 ? ' (cold)' : ''}: ${line.join('; ')}`);
    }
  } finally {
    for (const r of runners.values()) await r.shutdown();
    child.disconnect();
  }
  const warm = (xs: readonly number[]): readonly number[] => (xs.length > 1 ? xs.slice(1) : xs);
  for (const arm of arms) {
    const w = warm(wall.get(arm) ?? []);
    console.log(
      `${arm.padEnd(6)}  wall median ${seconds(median(w))} (${seconds(Math.min(...w))}–${seconds(Math.max(...w))}), ` +
        `CPU median ${seconds(median(warm(cpu.get(arm) ?? [])))}`,
    );
  }
  const [p, n] = [median(warm(wall.get('picker') ?? [])), median(warm(wall.get('none') ?? []))];
  const [cp, cn] = [median(warm(cpu.get('picker') ?? [])), median(warm(cpu.get('none') ?? []))];
  console.log(
    `the picker saves ${(100 * ((n - p) / n)).toFixed(1)} % of a collection's wall time ` +
      `(${(100 * ((cn - cp) / cn)).toFixed(1)} % of its CPU time)`,
  );
}

if (process.argv.includes('--server')) await serverMain();
else {
  sayRuntime();
  await main();
}
