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
  extensions: ['health_check', 'bearertokenauth'],
};

/** The token the tests' agents present to the shipped configs (their OTLP_TOKEN_FILE holds it). */
export const PUSH_TOKEN = 'collector-test-push-token-0123456789';
/** The token a scraper of the gateway's :8889 presents (SCRAPE_TOKEN_FILE). */
export const SCRAPE_TOKEN = 'collector-test-scrape-token-9876543210';

/** The token files of a test's Collectors, in `dir`, and the environment naming them. */
export interface TokenFiles {
  /** The file an agent pushing to them names with --otlp-bearer-token-file. */
  readonly push: string;
  /** The file a Prometheus scraping :8889 names as authorization.credentials_file. */
  readonly scrape: string;
  readonly env: Readonly<Record<string, string>>;
}

export function tokenFiles(dir: string): TokenFiles {
  const push = path.join(dir, 'otlp-token');
  const scrape = path.join(dir, 'scrape-tokens');
  // No newline at the end: collector-agent.yaml forwards the file's content as it is (see there).
  writeOnce(push, PUSH_TOKEN);
  writeOnce(scrape, `${SCRAPE_TOKEN}\n`);
  return { push, scrape, env: { OTLP_TOKEN_FILE: push, SCRAPE_TOKEN_FILE: scrape } };
}

/**
 * Writes a token file unless it already holds `content`: a running Collector watches the file, and
 * a rewrite in place shows it an empty file for a moment (it keeps the old tokens, with a warning).
 */
function writeOnce(file: string, content: string): void {
  if (fs.existsSync(file) && fs.readFileSync(file, 'utf8') === content) return;
  fs.writeFileSync(file, content, { mode: 0o600 });
}

/** The headers of an authorised scrape of :8889. */
export const SCRAPE_HEADERS: Readonly<Record<string, string>> = { authorization: `Bearer ${SCRAPE_TOKEN}` };

/** A scrape of the gateway's :8889 with the scrapers' token. */
export async function scrapeGateway(url: string): Promise<string> {
  const res = await fetch(url, { headers: SCRAPE_HEADERS });
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
  return res.text();
}

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
 * second config: maps merge key by key, lists replace), the given environment (over the token
 * files of tokenFiles(dir)) and nothing else inherited but PATH; resolves once its health_check at
 * `healthUrl` answers 200. `extraConfigs` are further files of the repository, merged in order
 * between the shipped file and the overrides.
 */
export async function startCollector(
  config: string,
  overrides: Record<string, unknown>,
  env: Record<string, string>,
  dir: string,
  healthUrl: string,
  extraConfigs: readonly string[] = [],
): Promise<RunningCollector> {
  const overrideFile = path.join(dir, `${path.basename(config, '.yaml')}.override.yaml`);
  fs.writeFileSync(overrideFile, stringify(overrides));
  const configs = [config, ...extraConfigs].flatMap((c) => ['--config', `file:${path.resolve(c)}`]);
  const child: ChildProcess = spawn(collectorPath(), [...configs, '--config', `file:${overrideFile}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { PATH: process.env.PATH ?? '', ...tokenFiles(dir).env, ...env },
  });
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
