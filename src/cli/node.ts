/** `slurm-otel node`: options (flag > IB_SLURM_EXPORTER_* > default) → the node agent. */
import os from 'node:os';
import { Command, Option } from 'commander';
import { createLogger, LOG_LEVELS, type LogFormat, type LogLevel } from '../log.js';
import { runNodeOnce, startNodeAgent, type NodeAgentOptions } from '../node/agent.js';
import { DEFAULT_ROOTS } from '../node/roots.js';
import type { BindAddress } from '../telemetry/http.js';
import type { OtlpProtocol } from '../telemetry/pipeline.js';
import { ConfigError, resolveOtlp, resolveResource, type Env } from './otel.js';
import { loadWebConfig, WebConfigError, type WebConfig } from '../telemetry/webconfig.js';
import { bindAddress, oneOf, parseDuration, positiveDuration } from './values.js';
import { VERSION, waitForSignal } from './common.js';

const ENV = 'IB_SLURM_EXPORTER_';

export interface NodeFlags {
  collectionInterval: number;
  fdRescanInterval: number;
  metricsBindAddress: BindAddress;
  monitoringBindAddress: BindAddress;
  sysfsRoot: string;
  procfsRoot: string;
  cgroupRoot: string;
  nodeName: string;
  squeuePath?: string;
  squeueTimeout: number;
  otlpEndpoint?: string;
  otlpProtocol?: OtlpProtocol;
  otlpInterval?: number;
  otlpTimeout?: number;
  logLevel: LogLevel;
  logFormat: LogFormat;
  webConfigFile?: string;
  once?: boolean;
}

function opt(flags: string, description: string, env: string): Option {
  return new Option(flags, description).env(ENV + env);
}

/** Options every command reading a node takes (node, demo, explain). */
export function addRootOptions(cmd: Command): Command {
  return cmd
    .addOption(opt('--sysfs-root <dir>', 'sysfs mount point', 'SYSFS_ROOT').default(DEFAULT_ROOTS.sysfs))
    .addOption(opt('--procfs-root <dir>', 'procfs mount point', 'PROCFS_ROOT').default(DEFAULT_ROOTS.procfs))
    .addOption(opt('--cgroup-root <dir>', 'cgroup filesystem mount point', 'CGROUP_ROOT').default(DEFAULT_ROOTS.cgroupfs));
}

/** Defaults a subcommand may change (the demo listens on loopback and cycles faster). */
export interface NodeDefaults {
  readonly collectionInterval: [number, string];
  readonly metricsBind: string;
  readonly monitoringBind: string;
  readonly logFormat: LogFormat;
}

const NODE_DEFAULTS: NodeDefaults = { collectionInterval: [15_000, '15s'], metricsBind: ':9836', monitoringBind: ':9837', logFormat: 'json' };

export function addNodeOptions(cmd: Command, defaults: NodeDefaults = NODE_DEFAULTS): Command {
  const d = defaults;
  return addRootOptions(cmd)
    .addOption(opt('--collection-interval <duration>', 'how often a cycle reads the node', 'COLLECTION_INTERVAL').default(...d.collectionInterval).argParser(positiveDuration))
    .addOption(opt('--fd-rescan-interval <duration>', 'every fd link is read again at least this often', 'FD_RESCAN_INTERVAL').default(60_000, '60s').argParser(parseDuration))
    .addOption(opt('--metrics-bind-address <addr>', 'Prometheus endpoint ([host]:port)', 'METRICS_BIND_ADDRESS').default(bindAddress(d.metricsBind), d.metricsBind).argParser(bindAddress))
    .addOption(opt('--monitoring-bind-address <addr>', 'self-monitoring endpoint ([host]:port)', 'MONITORING_BIND_ADDRESS').default(bindAddress(d.monitoringBind), d.monitoringBind).argParser(bindAddress))
    .addOption(opt('--node-name <name>', 'Slurm node name (squeue --nodelist, host.name)', 'NODE_NAME').default(os.hostname().split('.')[0]))
    .addOption(opt('--squeue-path <path>', 'resolve SLUIDs with a background squeue (off by default)', 'SQUEUE_PATH'))
    .addOption(opt('--squeue-timeout <duration>', 'timeout of one squeue run', 'SQUEUE_TIMEOUT').default(10_000, '10s').argParser(positiveDuration))
    .addOption(opt('--otlp-endpoint <url>', 'push OTLP/HTTP here (else OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT; off when none)', 'OTLP_ENDPOINT'))
    .addOption(opt('--otlp-protocol <protocol>', 'http/protobuf or http/json (else OTEL_EXPORTER_OTLP_[METRICS_]PROTOCOL; default http/protobuf)', 'OTLP_PROTOCOL').argParser(oneOf(['http/json', 'http/protobuf'] as const)))
    .addOption(opt('--otlp-interval <duration>', 'OTLP push interval (else OTEL_METRIC_EXPORT_INTERVAL ms; default 60s)', 'OTLP_INTERVAL').argParser(positiveDuration))
    .addOption(opt('--otlp-timeout <duration>', 'OTLP push timeout (else OTEL_EXPORTER_OTLP_[METRICS_]TIMEOUT ms; default 10s)', 'OTLP_TIMEOUT').argParser(positiveDuration))
    .addOption(opt('--web-config-file <path>', 'TLS and basic-auth settings for both endpoints (Prometheus web config format)', 'WEB_CONFIG_FILE'))
    .addOption(opt('--log-level <level>', 'debug, info, warn or error', 'LOG_LEVEL').default('info').argParser(oneOf(LOG_LEVELS)))
    .addOption(opt('--log-format <format>', 'json or plain', 'LOG_FORMAT').default(d.logFormat).argParser(oneOf(['json', 'plain'] as const)));
}

export function nodeAgentOptions(f: NodeFlags, env: Env): NodeAgentOptions {
  const logger = createLogger({ level: f.logLevel, format: f.logFormat });
  return {
    collector: { roots: { sysfs: f.sysfsRoot, procfs: f.procfsRoot, cgroupfs: f.cgroupRoot }, fdRescanIntervalMs: f.fdRescanInterval },
    squeue: f.squeuePath ? { path: f.squeuePath, nodeName: f.nodeName, minIntervalMs: f.collectionInterval, timeoutMs: f.squeueTimeout } : undefined,
    collectionIntervalMs: f.collectionInterval,
    metrics: f.metricsBindAddress,
    monitoring: f.monitoringBindAddress,
    resource: resolveResource(env, { serviceName: 'slurm-otel-node', hostName: f.nodeName, version: VERSION }),
    otlp: resolveOtlp(f, env),
    security: f.webConfigFile ? loadWebConfigOption(f.webConfigFile) : undefined,
    logger,
  };
}

export function nodeCommand(env: Env): Command {
  return addNodeOptions(new Command('node').description('node agent: HCA counters attributed to Slurm jobs'))
    .option('--once', 'run one cycle, print the Prometheus exposition to stdout and exit')
    .action(async (f: NodeFlags) => {
      const opts = nodeAgentOptions(f, env);
      if (f.once) {
        process.stdout.write(await runNodeOnce(opts));
        return;
      }
      const agent = await startNodeAgent(opts);
      await waitForSignal();
      await agent.stop();
    });
}

/** A bad web config file is a configuration error (exit 2), not a crash. */
export function loadWebConfigOption(file: string): WebConfig {
  try {
    return loadWebConfig(file);
  } catch (err) {
    if (err instanceof WebConfigError) throw new ConfigError(err.message);
    throw err;
  }
}
