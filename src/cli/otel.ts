/**
 * The standard OTEL_* variables, resolved once here: a flag wins over the
 * agent's own variable, which wins over OTEL_*, which wins over the default.
 * (The SDK's exporters would read some of these themselves; OTEL_METRIC_EXPORT_INTERVAL
 * they would not, so every value is settled here and passed explicitly.)
 */
import type { OtlpOptions, OtlpProtocol } from '../telemetry/pipeline.js';
import { BearerFileError, bearerTokenFile } from '../telemetry/bearer-file.js';
import { parseResourceAttributes } from '../telemetry/resource.js';
import { ConfigError } from './common.js';
import { MAX_DURATION_MS, MAX_DURATION_TEXT } from './values.js';
import { redactUrl, registerUrlSecrets } from '../log.js';

export type Env = Readonly<Record<string, string | undefined>>;

export interface OtlpFlags {
  readonly otlpEndpoint?: string;
  readonly otlpProtocol?: OtlpProtocol;
  readonly otlpInterval?: number;
  readonly otlpTimeout?: number;
  readonly otlpBearerTokenFile?: string;
}

const PROTOCOLS: readonly OtlpProtocol[] = ['http/json', 'http/protobuf'];

/** undefined when no endpoint is configured anywhere: push is off. */
export function resolveOtlp(flags: OtlpFlags, env: Env): OtlpOptions | undefined {
  const url =
    flags.otlpEndpoint !== undefined
      ? metricsUrl(flags.otlpEndpoint)
      : env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT ||
        (env.OTEL_EXPORTER_OTLP_ENDPOINT ? metricsUrl(env.OTEL_EXPORTER_OTLP_ENDPOINT) : undefined);
  if (!url) return undefined;
  registerUrlSecrets(url);
  try {
    new URL(url);
  } catch {
    throw new ConfigError(`OTLP endpoint "${redactUrl(url)}" is not a URL (expected e.g. http://127.0.0.1:4318)`);
  }
  const protocol =
    flags.otlpProtocol ??
    envChoice(env, ['OTEL_EXPORTER_OTLP_METRICS_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'], PROTOCOLS) ??
    'http/protobuf';
  const intervalMs = flags.otlpInterval ?? envMillis(env, 'OTEL_METRIC_EXPORT_INTERVAL') ?? 60_000;
  const timeoutMs =
    flags.otlpTimeout ??
    envMillis(env, 'OTEL_EXPORTER_OTLP_METRICS_TIMEOUT') ??
    envMillis(env, 'OTEL_EXPORTER_OTLP_TIMEOUT') ??
    10_000;
  const bearerTokenFile = checkedTokenFile(flags.otlpBearerTokenFile);
  return { url, protocol, intervalMs, timeoutMs, ...(bearerTokenFile ? { bearerTokenFile } : {}) };
}

/** A token file that cannot be read or holds no token stops the start (exit 2), naming the file only. */
function checkedTokenFile(path: string | undefined): string | undefined {
  if (path === undefined || path === '') return undefined;
  try {
    bearerTokenFile(path);
  } catch (err) {
    if (err instanceof BearerFileError) throw new ConfigError(err.message);
    throw err;
  }
  return path;
}

/** A base URL gets the signal path; one that already has a path is taken verbatim. */
function metricsUrl(base: string): string {
  const trimmed = base.replace(/\/+$/, '');
  try {
    const u = new URL(trimmed);
    return u.pathname === '' || u.pathname === '/' ? `${trimmed}/v1/metrics` : trimmed;
  } catch {
    return trimmed;
  }
}

function envChoice<T extends string>(env: Env, names: readonly string[], choices: readonly T[]): T | undefined {
  for (const name of names) {
    const v = env[name];
    if (v === undefined || v === '') continue;
    if (v === 'grpc') throw new ConfigError(`${name}=grpc is not supported: use http/protobuf or http/json`);
    if (!(choices as readonly string[]).includes(v))
      throw new ConfigError(`${name}="${v}" is not one of ${choices.join(', ')}`);
    return v as T;
  }
  return undefined;
}

function envMillis(env: Env, name: string): number | undefined {
  const v = env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new ConfigError(`${name}="${v}" must be a positive number of milliseconds`);
  if (n > MAX_DURATION_MS)
    throw new ConfigError(
      `${name}="${v}" is longer than ${MAX_DURATION_MS} ms (${MAX_DURATION_TEXT}), the longest a timer can wait`,
    );
  return n;
}

export function resolveResource(
  env: Env,
  defaults: { serviceName: string; hostName: string; version: string },
  attributes?: Record<string, string>,
) {
  const extra = env.OTEL_RESOURCE_ATTRIBUTES ?? '';
  try {
    parseResourceAttributes(extra);
  } catch (err) {
    throw new ConfigError(`OTEL_RESOURCE_ATTRIBUTES: ${(err as Error).message}`);
  }
  return {
    serviceName: env.OTEL_SERVICE_NAME || defaults.serviceName,
    serviceVersion: defaults.version,
    hostName: defaults.hostName,
    extra,
    attributes,
  };
}
