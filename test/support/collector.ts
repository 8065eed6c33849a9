/**
 * The real OpenTelemetry Collector that scripts/collector/build.sh builds (from
 * scripts/collector/manifest.yaml) into the cache outside the clone, run on loopback with the
 * project's own configs. Under CI a missing binary fails the tests; elsewhere they are skipped
 * with a message naming the script.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { requireBinary, shouldRunWith } from './cached-binary.js';
import { stringify } from 'yaml';
import { stopChild, waitFor } from './tools.js';

const MANIFEST = path.resolve('scripts/collector/manifest.yaml');

export type ComponentKind = 'receivers' | 'processors' | 'exporters' | 'extensions';

/**
 * The component types (config keys) of the manifest's build, by kind: what the configs may name.
 * Deprecated aliases that still load with a warning (`otlp` as an exporter, `otlphttp`,
 * `prometheusremotewrite`) are not in it, nor is `batch` (its processor is deprecated). The
 * integration test checks this against the binary's own `otelcol components`.
 */
export const COLLECTOR_COMPONENTS: Readonly<Record<ComponentKind, readonly string[]>> = {
  receivers: ['otlp'],
  processors: ['memory_limiter', 'resource'],
  exporters: ['otlp_grpc', 'otlp_http', 'debug', 'prometheus_remote_write', 'prometheus'],
  extensions: ['health_check'],
};

/** The release the manifest pins (its dist.version). */
export function collectorVersion(): string {
  const m = /^\s+version:\s*(\S+)\s*$/m.exec(fs.readFileSync(MANIFEST, 'utf8'));
  if (!m) throw new Error(`${MANIFEST}: no dist.version`);
  return m[1] as string;
}

/** Where build.sh leaves the binary (the same default cache as the Slurm chroots). */
export function collectorBinary(): string {
  const cache = process.env.SLURM_OTEL_CHROOT_CACHE ?? '/var/cache/slurm-otel';
  return path.join(cache, `otelcol-${collectorVersion()}`, 'otelcol');
}

/** Whether the Collector tests run: always under CI (they then fail if the binary is missing). */
export function shouldRunCollector(): boolean {
  return shouldRunWith(collectorBinary(), 'OpenTelemetry Collector', 'scripts/collector/build.sh');
}

/** The binary's path; throws (naming the script) when it is missing. */
export function collectorPath(): string {
  return requireBinary(collectorBinary(), 'scripts/collector/build.sh');
}

export interface RunningCollector {
  /** Everything the Collector logged so far. */
  log(): string;
  /** Log lines at level warn or above, and any line that speaks of a deprecation. */
  warnings(): string[];
  stop(): Promise<void>;
}

/**
 * Runs `config` (a file of the repository, loaded as shipped) with `overrides` merged over it (a
 * second config: maps merge key by key, lists replace), the given environment and nothing else
 * inherited but PATH; resolves once its health_check at `healthUrl` answers 200.
 */
export async function startCollector(
  config: string,
  overrides: Record<string, unknown>,
  env: Record<string, string>,
  dir: string,
  healthUrl: string,
): Promise<RunningCollector> {
  const overrideFile = path.join(dir, `${path.basename(config, '.yaml')}.override.yaml`);
  fs.writeFileSync(overrideFile, stringify(overrides));
  const child: ChildProcess = spawn(
    collectorPath(),
    ['--config', `file:${path.resolve(config)}`, '--config', `file:${overrideFile}`],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH ?? '', ...env } },
  );
  let log = '';
  child.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  const running: RunningCollector = {
    log: () => log,
    warnings: () => warningLines(log),
    stop: () => stopChild(child),
  };
  await waitFor(
    `the Collector (${config}) to report healthy at ${healthUrl}`,
    async () => {
      if (child.exitCode !== null) throw new Error(`it exited (${child.exitCode}):\n${log}`);
      return (await fetch(healthUrl).catch(() => undefined))?.status === 200 ? true : undefined;
    },
    60_000,
  ).catch(async (e: unknown) => {
    await running.stop();
    throw e;
  });
  return running;
}

/** Warnings and errors of a Collector log (its console lines carry the level as a word). */
export function warningLines(log: string): string[] {
  return log.split('\n').filter((l) => /\t(warn|error|fatal|panic)\t/i.test(l) || /deprecat/i.test(l));
}
