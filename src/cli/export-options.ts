/**
 * Options both agents share: where they serve, where they push, how they log
 * and secure their endpoints. Each agent passes its own environment prefix.
 */
import { Command, Option } from 'commander';
import { createLogger, LOG_LEVELS, type LogFormat, type LogLevel } from '../log.js';
import type { BindAddress } from '../telemetry/http.js';
import type { OtlpProtocol } from '../telemetry/pipeline.js';
import type { AgentSettings } from '../telemetry/runtime.js';
import { loadWebConfig, WebConfigError, type WebConfig } from '../telemetry/webconfig.js';
import { BearerFileError, bearerTokenFile } from '../telemetry/bearer-file.js';
import { ConfigError, VERSION } from './common.js';
import type { SettingErrors } from './settings.js';
import { resolveOtlp, resolveResource, type Env } from './otel.js';
import { bindAddress, oneOf, positiveDuration } from './values.js';

export interface ExportFlags {
  collectionInterval: number;
  metricsBindAddress: BindAddress;
  monitoringBindAddress: BindAddress;
  otlpEndpoint?: string;
  otlpProtocol?: OtlpProtocol;
  otlpInterval?: number;
  otlpTimeout?: number;
  otlpBearerTokenFile?: string;
  logLevel: LogLevel;
  logFormat: LogFormat;
  webConfigFile?: string;
  once?: boolean;
}

export interface ExportDefaults {
  readonly metricsBind: string;
  readonly monitoringBind: string;
  readonly logFormat: LogFormat;
}

/** An option whose environment variable is the agent's prefix + NAME. */
export function envOption(prefix: string): (flags: string, description: string, name: string) => Option {
  return (flags, description, name) => new Option(flags, description).env(prefix + name);
}

export function addExportOptions(cmd: Command, prefix: string, d: ExportDefaults): Command {
  const opt = envOption(prefix);
  return cmd
    .addOption(
      opt('--metrics-bind-address <addr>', 'Prometheus endpoint ([host]:port)', 'METRICS_BIND_ADDRESS')
        .default(bindAddress(d.metricsBind), d.metricsBind)
        .argParser(bindAddress),
    )
    .addOption(
      opt('--monitoring-bind-address <addr>', 'self-monitoring endpoint ([host]:port)', 'MONITORING_BIND_ADDRESS')
        .default(bindAddress(d.monitoringBind), d.monitoringBind)
        .argParser(bindAddress),
    )
    .addOption(
      opt(
        '--otlp-endpoint <url>',
        'push OTLP/HTTP here (else OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT; off when none)',
        'OTLP_ENDPOINT',
      ),
    )
    .addOption(
      opt(
        '--otlp-protocol <protocol>',
        'http/protobuf or http/json (else OTEL_EXPORTER_OTLP_[METRICS_]PROTOCOL; default http/protobuf)',
        'OTLP_PROTOCOL',
      ).argParser(oneOf(['http/json', 'http/protobuf'] as const)),
    )
    .addOption(
      opt(
        '--otlp-interval <duration>',
        'OTLP push interval (else OTEL_METRIC_EXPORT_INTERVAL ms; default 60s)',
        'OTLP_INTERVAL',
      ).argParser(positiveDuration),
    )
    .addOption(
      opt(
        '--otlp-timeout <duration>',
        'OTLP push timeout (else OTEL_EXPORTER_OTLP_[METRICS_]TIMEOUT ms; default 10s)',
        'OTLP_TIMEOUT',
      ).argParser(positiveDuration),
    )
    .addOption(
      opt(
        '--otlp-bearer-token-file <path>',
        "send the token in this file as the OTLP push's bearer credential (read again when it changes)",
        'OTLP_BEARER_TOKEN_FILE',
      ),
    )
    .addOption(
      opt(
        '--web-config-file <path>',
        'TLS and basic-auth settings for both endpoints (Prometheus web config format)',
        'WEB_CONFIG_FILE',
      ),
    )
    .addOption(
      // One default for both agents: a site reads both logs at one level.
      opt('--log-level <level>', 'debug, info, warn or error', 'LOG_LEVEL')
        .default('info')
        .argParser(oneOf(LOG_LEVELS)),
    )
    .addOption(
      opt('--log-format <format>', 'json or plain', 'LOG_FORMAT')
        .default(d.logFormat)
        .argParser(oneOf(['json', 'plain'] as const)),
    );
}

/** The settings both agents are started with (the one place they are built from the command line). */
export function exportSettings(
  f: ExportFlags,
  env: Env,
  resource: { serviceName: string; hostName: string; attributes?: Record<string, string> },
): AgentSettings {
  return {
    collectionIntervalMs: f.collectionInterval,
    logger: createLogger({ level: f.logLevel, format: f.logFormat }),
    resource: resolveResource(env, { ...resource, version: VERSION }, resource.attributes),
    otlp: resolveOtlp(f, env),
    security: f.webConfigFile ? loadWebConfigOption(f.webConfigFile) : undefined,
    metrics: f.metricsBindAddress,
    monitoring: f.monitoringBindAddress,
  };
}

/** A bad web config file is a configuration error (exit 2), not a crash. */
function loadWebConfigOption(file: string): WebConfig {
  try {
    return loadWebConfig(file);
  } catch (err) {
    if (err instanceof WebConfigError) throw new ConfigError(err.message);
    throw err;
  }
}

/** The files both agents read at start, each checked whole: the web config and the OTLP bearer token. */
export function checkExportFiles(errors: SettingErrors, f: ExportFlags): void {
  if (f.webConfigFile) {
    const file = f.webConfigFile;
    errors.check(() => loadWebConfigOption(file));
  }
  if (f.otlpBearerTokenFile) {
    const file = f.otlpBearerTokenFile;
    errors.check(() => {
      try {
        bearerTokenFile(file);
      } catch (err) {
        if (err instanceof BearerFileError) throw new ConfigError(err.message);
        throw err;
      }
    });
  }
}
