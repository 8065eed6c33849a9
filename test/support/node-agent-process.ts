/** The built `slurm-otel node` as its own process, on the real /proc, for the real-cgroup tests. */
import { spawn, type ChildProcess } from 'node:child_process';
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

/** Starts the node agent with `args`, a 1 s cycle and loopback endpoints; resolves once it serves /metrics. */
export async function startNodeAgentProcess(args: string[]): Promise<AgentProcess> {
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
    { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH ?? '' } },
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
