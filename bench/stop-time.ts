/**
 * Time from SIGTERM to exit of the built agents, for each situation a stop must cut short
 * (test/support/stop-cases.ts): a refused and a hanging OTLP export, a slurmrestd that never
 * answers, a hanging scontrol, a daemonizing squeue and rdma, a hanging and a daemonizing
 * restore with --qp-counters manage, scrapers connected. Prints the exit status, the seconds
 * and how many helper processes outlived the agent. An agent still running after CAP_MS is
 * killed and shown as "> CAP". Goal: every case ≤ 3 s, exit status 0, no survivors.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/stop-time.js [part of a case name]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  otlpHanging,
  otlpRefused,
  rdmaDaemonizing,
  rdmaRestore,
  scontrolHanging,
  scrapesOpen,
  slurmrestdHanging,
  squeueDaemonizing,
  type StopCase,
} from '../test/support/stop-cases.js';
import { DAEMONIZE, spawnAgent } from '../test/support/stopping.js';
import { sayRuntime } from './stats.js';

const CAP_MS = 75_000;
const READY_MS = 30_000;

const CASES: Record<string, (dir: string) => Promise<StopCase>> = {
  'OTLP refused': otlpRefused,
  'OTLP never answers': otlpHanging,
  'slurmrestd never answers': slurmrestdHanging,
  'scontrol token hangs': scontrolHanging,
  'squeue daemonizes': squeueDaemonizing,
  'rdma daemonizes': rdmaDaemonizing,
  'manage: restore hangs': (dir) => rdmaRestore(dir, 'exec sleep 600'),
  'manage: restore daemonizes': (dir) => rdmaRestore(dir, `${DAEMONIZE}\nexit 0`),
  'scrapers connected': scrapesOpen,
};

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return cond();
}

async function measure(name: string, make: (dir: string) => Promise<StopCase>): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stop-bench-'));
  const c = await make(dir);
  const agent = spawnAgent(c.args, CAP_MS + READY_MS);
  try {
    if (!(await until(() => c.inFlight(agent), READY_MS))) return `${name}: never in flight`;
    const url = agent.metricsUrl();
    if ('connect' in c && url !== undefined) await (c as { connect(url: string): Promise<unknown> }).connect(url);
    const sent = agent.signal('SIGTERM');
    const exited = await Promise.race([
      agent.exited,
      new Promise<undefined>((r) => setTimeout(() => r(undefined), CAP_MS)),
    ]);
    if (exited === undefined) agent.signal('SIGKILL');
    await until(() => c.standIns.survivors().length === 0, 2000);
    const survivors = c.standIns.survivors().length;
    const secs = exited === undefined ? `> ${CAP_MS / 1000}` : ((exited.atMs - sent) / 1000).toFixed(2);
    const status = exited === undefined ? 'killed' : (exited.code ?? exited.signal);
    return `${name.padEnd(28)} ${secs.padStart(7)} s  exit ${String(status).padEnd(6)} survivors ${survivors}`;
  } finally {
    agent.signal('SIGKILL');
    c.standIns.killAll();
    await c.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

sayRuntime();
const only = process.argv[2];
for (const [name, make] of Object.entries(CASES)) {
  if (only !== undefined && !name.includes(only)) continue;
  process.stdout.write(`${await measure(name, make)}\n`);
}
