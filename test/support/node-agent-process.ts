/** The built `slurm-otel node` as its own process, on the real /proc, for the real-cgroup tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { parseExposition, select, valueOf, type Sample } from './exposition.js';
import { freePort, waitFor } from './tools.js';

const BIN = path.resolve('dist/src/cli/main.js');

export interface AgentProcess {
  readonly child: ChildProcess;
  readonly url: string;
  /** The self-monitoring endpoint's /metrics. */
  readonly monitoringUrl: string;
  readonly stderr: () => string;
}

/**
 * Starts the node agent with `args`, a 1 s cycle and loopback endpoints; resolves once it serves
 * /metrics. Its environment is PATH and `env` only.
 */
export async function startNodeAgentProcess(args: string[], env: Record<string, string> = {}): Promise<AgentProcess> {
  const [metrics, monitoring] = [await freePort(), await freePort()];
  const child = spawn(
    process.execPath,
    [
      BIN,
      'node',
      ...args,
      '--collection-interval',
      '1s',
      '--log-format',
      'plain',
      '--metrics-bind-address',
      `127.0.0.1:${metrics}`,
      '--monitoring-bind-address',
      `127.0.0.1:${monitoring}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH ?? '', ...env } },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const agent = {
    child,
    url: `http://127.0.0.1:${metrics}/metrics`,
    monitoringUrl: `http://127.0.0.1:${monitoring}/metrics`,
    stderr: () => stderr,
  };
  await waitFor(
    'the agent to serve /metrics',
    async () => ((await fetch(agent.url).catch(() => undefined))?.ok ? true : undefined),
    20_000,
  );
  return agent;
}

export async function scrape(agent: AgentProcess): Promise<Sample[]> {
  const res = await fetch(agent.url);
  expect(res.status, agent.stderr()).toBe(200);
  return parseExposition(await res.text());
}

/** The attribution status of port 1 of `device` (the one series whose value is 1). */
export function statusOf(samples: readonly Sample[], device: string): string | undefined {
  return select(samples, 'ib_slurm_port_attribution', { device, port: '1' }).find((s) => s.value === 1)?.labels.status;
}

/** The job ids of `name`'s series on `device`, sorted. */
export function jobIdsOn(samples: readonly Sample[], name: string, device: string): string[] {
  return select(samples, name, { device })
    .map((s) => s.labels.job_id as string)
    .sort();
}

/** Each device's port-1 attribution status and `ib_slurm_device_jobs`, to compare as two tables. */
export function portTable(
  samples: readonly Sample[],
  devices: readonly string[],
): { status: Record<string, string | undefined>; jobs: Record<string, number | undefined> } {
  return {
    status: Object.fromEntries(devices.map((d) => [d, statusOf(samples, d)])),
    jobs: Object.fromEntries(
      devices.map((d) => [d, valueOf(samples, 'ib_slurm_device_jobs', { device: d, port: '1' })]),
    ),
  };
}

/** After `count()` moves the port's counters, waits for the job to be credited exactly `bytes` more. */
export async function expectCredited(
  agent: AgentProcess,
  job: { jobId: string; device: string },
  bytes: number,
  count: () => void,
  waitMs: number,
): Promise<void> {
  const labels = { job_id: job.jobId, device: job.device };
  const before = valueOf(await scrape(agent), 'ib_slurm_job_transmit_bytes_total', labels) as number;
  count();
  await waitFor(
    `job ${job.jobId} to be credited ${bytes} bytes on ${job.device}`,
    async () =>
      valueOf(await scrape(agent), 'ib_slurm_job_transmit_bytes_total', labels) === before + bytes ? true : undefined,
    waitMs,
  );
}

/** Waits until the job has no series left and the device's port is idle; the scrape that showed it. */
export function waitForJobGone(agent: AgentProcess, jobId: string, device: string, waitMs: number): Promise<Sample[]> {
  return waitFor(
    `job ${jobId} to leave`,
    async () => {
      const got = await scrape(agent);
      return statusOf(got, device) === 'idle' && !got.some((x) => x.labels.job_id === jobId) ? got : undefined;
    },
    waitMs,
  );
}

/** Processes outside every Slurm job whose fd table root cannot read on this host (e.g. PID 1 on these VMs). */
export function unreadableOutsideJobs(): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // Any Slurm's jobs, as the agent sees them: v1 slurm[_<node>]/uid_<U>/job_<J>, v2 <node>_slurmstepd.scope/<job>.
      const cgroup = fs.readFileSync(`/proc/${name}/cgroup`, 'utf8');
      if (/\/slurm(_[^/]*)?\/uid_\d+\/job_|_slurmstepd\.scope\/(job_\d+|s[0-9A-Z]{13})/.test(cgroup)) continue;
      for (const fd of fs.readdirSync(`/proc/${name}/fd`)) fs.readlinkSync(`/proc/${name}/fd/${fd}`);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EACCES' || code === 'EPERM') out.push(Number(name));
    }
  }
  return out;
}
