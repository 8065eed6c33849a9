/**
 * Debian's VictoriaMetrics server, as scripts/victoria-metrics/get.sh leaves it in the cache outside
 * the clone, run on loopback. Under CI a missing binary fails the tests; elsewhere they are skipped
 * with a message naming the script.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { requireBinary, shouldRunWith } from './cached-binary.js';
import { freePort, stopChild, waitFor } from './tools.js';

const GET = 'scripts/victoria-metrics/get.sh';

/** The Debian version the script pins (its VERSION=). */
export function victoriaMetricsVersion(): string {
  const m = /^VERSION=(\S+)$/m.exec(fs.readFileSync(path.resolve(GET), 'utf8'));
  if (!m) throw new Error(`${GET}: no VERSION=`);
  return m[1] as string;
}

/** Where get.sh leaves the server (the same default cache as the Slurm chroots). */
export function victoriaMetricsBinary(): string {
  const cache = process.env.SLURM_OTEL_CHROOT_CACHE ?? '/var/cache/slurm-otel';
  return path.join(cache, `victoria-metrics-${victoriaMetricsVersion()}`, 'victoria-metrics');
}

/** Whether the VictoriaMetrics tests run: always under CI (they then fail if the binary is missing). */
export function shouldRunVictoriaMetrics(): boolean {
  return shouldRunWith(victoriaMetricsBinary(), 'VictoriaMetrics', GET);
}

/** The binary's path; throws (naming the script) when it is missing. */
export function victoriaMetricsPath(): string {
  return requireBinary(victoriaMetricsBinary(), GET);
}

/** One series as VictoriaMetrics's Prometheus API gives it: labels (with __name__) and the last value. */
export interface StoredSeries {
  readonly metric: Readonly<Record<string, string>>;
  readonly value: string;
}

export interface VictoriaMetrics {
  readonly url: string;
  /** Its OTLP/HTTP (protobuf) endpoint. */
  readonly otlpUrl: string;
  /** Its Prometheus remote-write endpoint. */
  readonly remoteWriteUrl: string;
  /** An instant query at now, with nothing held back (the store's default hides the last 30 s). */
  query(expr: string): Promise<StoredSeries[]>;
  /** Everything it logged so far. */
  log(): string;
  stop(): Promise<void>;
}

/**
 * Starts the server with its data in `dir`, the shortest retention it takes and `flags`; resolves
 * once /health answers.
 */
export async function startVictoriaMetrics(dir: string, flags: readonly string[]): Promise<VictoriaMetrics> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    victoriaMetricsPath(),
    [
      `-httpListenAddr=127.0.0.1:${port}`,
      `-storageDataPath=${path.join(dir, 'victoria-metrics-data')}`,
      '-retentionPeriod=1d',
      ...flags,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '' } },
  );
  let log = '';
  const keep = (d: Buffer): void => void (log += d.toString());
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  const vm: VictoriaMetrics = {
    url,
    otlpUrl: `${url}/opentelemetry/v1/metrics`,
    remoteWriteUrl: `${url}/api/v1/write`,
    query: async (expr) => {
      const res = await fetch(`${url}/api/v1/query?latency_offset=1ms&query=${encodeURIComponent(expr)}`);
      const body = (await res.json()) as {
        status: string;
        data?: { result: { metric: Record<string, string>; value: [number, string] }[] };
        error?: string;
      };
      if (body.status !== 'success') throw new Error(`query ${expr}: ${body.error}`);
      return (body.data?.result ?? []).map((r) => ({ metric: r.metric, value: r.value[1] }));
    },
    log: () => log,
    stop: () => stopChild(child),
  };
  await waitFor(
    `VictoriaMetrics to answer at ${url}/health`,
    async () => {
      if (child.exitCode !== null) throw new Error(`it exited (${child.exitCode}):\n${log}`);
      return (await fetch(`${url}/health`).catch(() => undefined))?.ok ? true : undefined;
    },
    60_000,
  ).catch(async (e: unknown) => {
    await vm.stop();
    throw e;
  });
  return vm;
}
