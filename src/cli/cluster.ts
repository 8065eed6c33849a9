/**
 * `slurm-otel cluster`: Soperator's options (flag > SLURM_EXPORTER_* > default)
 * plus API version, timeouts and token sources → the cluster agent. The token source and the
 * Kubernetes lists are built in cluster-sources.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import { Command } from 'commander';
import { SlurmClient } from '../cluster/api/client.js';
import { parseServer } from '../cluster/http/transport.js';
import { runClusterOnce, startClusterAgent, type ClusterAgentOptions } from '../cluster/agent.js';
import type { JobSource } from '../cluster/fetchers.js';
import {
  DEFAULT_OPTIONAL_SUB_COLLECTORS,
  OPTIONAL_SUB_COLLECTORS,
  type OptionalSubCollector,
} from '../cluster/snapshot.js';
import { redactUrl } from '../log.js';
import {
  buildTokenSource,
  chooseTokenSource,
  kubernetesAccess,
  topologySource,
  TOKEN_SOURCES,
  type SourceFlags,
} from './cluster-sources.js';
import { CollectionIncomplete, ConfigError, runUntilSignal, printExposition } from './common.js';
import { clusterDisabledMetrics, disableMetricsOption } from './disable-metrics.js';
import { addExportOptions, checkExportFiles, envOption, exportSettings, type ExportFlags } from './export-options.js';
import { configErrorsOf, isRefused, keepRefusals, refusals, SettingErrors, unreadableFile } from './settings.js';
import type { Env } from './otel.js';
import { oneOf, parseSize, positiveDuration, positiveInt, switchValue } from './values.js';

const PREFIX = 'SLURM_EXPORTER_';
const opt = envOption(PREFIX);

export interface ClusterFlags extends ExportFlags, SourceFlags {
  collectionInterval: number;
  maxCollectorInflight: number;
  jobSource: JobSource;
  accountingJobsLookback: string;
  slurmApiVersion: string;
  requestRetries: number;
  maxResponseSize: number;
  slurmApiCaFile?: string;
  userAccountMetrics: boolean;
  accountingLimits: boolean;
  disableMetrics?: string;
}

export interface ClusterDefaults {
  readonly metricsBind: string;
  readonly monitoringBind: string;
  readonly logFormat: 'json' | 'plain';
}

const CLUSTER_DEFAULTS: ClusterDefaults = { metricsBind: ':8080', monitoringBind: ':8081', logFormat: 'json' };

export function addClusterOptions(cmd: Command, d: ClusterDefaults = CLUSTER_DEFAULTS): Command {
  cmd
    .addOption(
      // Required, checked with every other setting (checkClusterSettings), not alone by the parser.
      opt('--cluster-name <name>', 'the name of the Slurm cluster (required)', 'CLUSTER_NAME'),
    )
    .addOption(
      opt(
        '--cluster-namespace <namespace>',
        'Kubernetes namespace of the cluster (token source kubernetes; its worker pods for the topology sub-collector)',
        'CLUSTER_NAMESPACE',
      ).default('soperator'),
    )
    .addOption(
      opt(
        '--slurm-api-server <url>',
        'slurmrestd address: http(s)://host:port or unix:/path',
        'SLURM_API_SERVER',
      ).default('http://localhost:6820'),
    )
    .addOption(
      opt('--collection-interval <duration>', 'how often to collect from the Slurm APIs', 'COLLECTION_INTERVAL')
        .default(30_000, '30s')
        .argParser(positiveDuration),
    )
    .addOption(
      opt('--max-collector-inflight <n>', 'maximum in-flight runs per sub-collector', 'MAX_COLLECTOR_INFLIGHT')
        .default(1)
        .argParser(positiveInt),
    )
    .addOption(
      opt('--job-source <source>', 'controller (slurmctld) or accounting (slurmdbd)', 'JOB_SOURCE')
        .default('controller')
        .argParser(jobSource),
    )
    // Read only with the accounting source: a stale value must not stop a controller-mode agent.
    .addOption(
      opt(
        '--accounting-jobs-lookback <duration>',
        'accounting window: [now - lookback, now + 5m]',
        'ACCOUNTING_JOBS_LOOKBACK',
      ).default('1h'),
    )
    .addOption(
      opt(
        '--slurm-api-version <version>',
        'auto (newest both sides know) or a version such as v0.0.44',
        'SLURM_API_VERSION',
      ).default('auto'),
    )
    .addOption(
      opt('--request-timeout <duration>', 'timeout of one request, body included', 'REQUEST_TIMEOUT')
        .default(60_000, '60s')
        .argParser(positiveDuration),
    )
    .addOption(
      opt('--request-retries <n>', 'retries after a timeout, network error or 502/503/504', 'REQUEST_RETRIES')
        .default(2)
        .argParser((v) => (v === '0' ? 0 : positiveInt(v))),
    )
    .addOption(
      opt('--max-response-size <size>', 'refuse a response larger than this', 'MAX_RESPONSE_SIZE')
        .default(2 ** 31, '2GiB')
        .argParser(parseSize),
    )
    .addOption(opt('--slurm-api-ca-file <path>', 'PEM CA bundle for an https slurmrestd', 'SLURM_API_CA_FILE'))
    .addOption(
      opt('--token-source <source>', `${TOKEN_SOURCES.join(', ')}; auto picks from what is configured`, 'TOKEN_SOURCE')
        .default('auto')
        .argParser(oneOf(TOKEN_SOURCES)),
    )
    .addOption(opt('--token <jwt>', 'static token (prefer the environment variable: flags show in ps)', 'TOKEN'))
    .addOption(opt('--token-file <path>', 'token file, re-read when it changes (a JWT or SLURM_JWT=...)', 'TOKEN_FILE'))
    .addOption(
      opt(
        '--slurm-user-name <user>',
        "X-SLURM-USER-NAME for static and file tokens (default: the token's sun claim)",
        'SLURM_USER_NAME',
      ),
    )
    .addOption(opt('--jwt-key-file <path>', "sign HS256 tokens with the cluster's jwt_hs256.key", 'JWT_KEY_FILE'))
    .addOption(opt('--jwt-user <user>', 'user (sun claim) of signed and scontrol tokens', 'JWT_USER').default('root'))
    .addOption(
      opt('--jwt-lifetime <duration>', 'lifetime of signed and scontrol tokens (renewed before expiry)', 'JWT_LIFETIME')
        .default(1_800_000, '30m')
        .argParser(positiveDuration),
    )
    .addOption(
      opt('--scontrol-path <path>', 'scontrol for token renewal (token source scontrol)', 'SCONTROL_PATH').default(
        'scontrol',
      ),
    )
    .addOption(
      opt(
        '--user-account-metrics [bool]',
        "Slurm's per-user and per-account job families on /metrics too (one series per user or account and state; always on /metrics/jobs-users-accts)",
        'USER_ACCOUNT_METRICS',
      )
        .default(false)
        .preset('true')
        .argParser(switchValue),
    )
    .addOption(
      opt(
        '--optional-collectors <names>',
        `optional sub-collectors to run, comma-separated (${OPTIONAL_SUB_COLLECTORS.join(', ')}), or none; topology reads Soperator's worker pods and Nodes from the Kubernetes API (needs list on pods and nodes)`,
        'OPTIONAL_COLLECTORS',
      )
        .default([...DEFAULT_OPTIONAL_SUB_COLLECTORS], DEFAULT_OPTIONAL_SUB_COLLECTORS.join(','))
        .argParser(collectorList),
    )
    .addOption(
      opt(
        '--accounting-limits [bool]',
        'also export QoS and association limits from slurmdbd (two requests more per cycle)',
        'ACCOUNTING_LIMITS',
      )
        .default(false)
        .preset('true')
        .argParser(switchValue),
    )
    .addOption(
      opt(
        '--kubeconfig-path <path>',
        'kubeconfig for the Secret <cluster-name>-rest-jwt-key and the topology sub-collector (else in-cluster service account)',
        'KUBECONFIG_PATH',
      ),
    );
  return addExportOptions(cmd, PREFIX, d).addOption(disableMetricsOption(PREFIX));
}

/** `licenses, partitions` → the names, each checked; `none` or blank means none. */
function collectorList(value: string): OptionalSubCollector[] {
  const names = value
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '' && v.toLowerCase() !== 'none');
  return [...new Set(names.map(oneOf(OPTIONAL_SUB_COLLECTORS)))];
}

/** Soperator's reading: blank means the default, case and surrounding blanks do not matter. */
function jobSource(value: string): JobSource {
  return value.trim() === '' ? 'controller' : oneOf(['controller', 'accounting'] as const)(value);
}

/** The accounting window, checked only when the accounting source will use it. */
export function accountingLookbackMs(
  f: Pick<ClusterFlags, 'jobSource' | 'accountingJobsLookback'>,
): number | undefined {
  if (f.jobSource !== 'accounting') return undefined;
  try {
    return positiveDuration(f.accountingJobsLookback);
  } catch (err) {
    throw new ConfigError(`--accounting-jobs-lookback: ${(err as Error).message}`);
  }
}

/**
 * Every setting the cluster agent cannot start with, checked before anything is built: `refused`
 * (values the option parsers refused), the cluster name, the server address, the metric names,
 * the token source and the files it reads (token, key, CA bundle, kubeconfig, web config). Throws
 * one ConfigError naming them all.
 */
export function checkClusterSettings(f: ClusterFlags, env: Env, refused: readonly string[] = []): void {
  const errors = new SettingErrors(refused);
  if (!f.clusterName) errors.add("required option '--cluster-name <name>' not specified");
  errors.check(() => {
    try {
      parseServer(f.slurmApiServer);
    } catch (err) {
      throw new ConfigError(`--slurm-api-server: ${(err as Error).message}`);
    }
  });
  if (!isRefused(f.jobSource)) errors.check(() => accountingLookbackMs(f));
  errors.check(() => clusterDisabledMetrics(f.disableMetrics));
  checkExportFiles(errors, f);
  for (const [flag, file] of [
    ['--slurm-api-ca-file', f.slurmApiCaFile],
    ['--kubeconfig-path', f.kubeconfigPath],
  ] as const) {
    const why = unreadableFile(flag, file);
    if (why !== undefined) errors.add(why);
  }
  if (!isRefused(f.tokenSource)) errors.add(...tokenSourceErrors(f, env));
  if (!isRefused(f.optionalCollectors) && f.optionalCollectors.includes('topology'))
    errors.check(() => kubernetesAccess(f, env, 'optional collector topology'));
  errors.throwIfAny();
}

/** What the chosen token source lacks: its flag, or a file it cannot read. */
function tokenSourceErrors(f: ClusterFlags, env: Env): string[] {
  const needs = (v: string | undefined, flag: string): string[] =>
    v ? [] : [`token source ${f.tokenSource} needs ${flag}`];
  const file = (v: string | undefined, flag: string): string[] => {
    const why = v ? unreadableFile(flag, v) : `token source ${f.tokenSource} needs ${flag}`;
    return why === undefined ? [] : [why];
  };
  switch (chooseTokenSource(f, env)) {
    case 'static':
      return needs(f.token, '--token or SLURM_EXPORTER_TOKEN');
    case 'file':
      return file(f.tokenFile, '--token-file');
    case 'jwt-key':
      return file(f.jwtKeyFile, '--jwt-key-file');
    case 'kubernetes':
      return configErrorsOf(() => kubernetesAccess(f, env, 'token source kubernetes'));
    default:
      return [];
  }
}

export function clusterAgentOptions(f: ClusterFlags, env: Env, refused: readonly string[] = []): ClusterAgentOptions {
  checkClusterSettings(f, env, refused);
  const lookbackMs = accountingLookbackMs(f);
  const disabledMetrics = clusterDisabledMetrics(f.disableMetrics);
  const settings = exportSettings(f, env, {
    serviceName: 'slurm-otel-cluster',
    hostName: os.hostname(),
    attributes: { 'slurm.cluster': f.clusterName },
  });
  const tokenSource = buildTokenSource(f, env, settings.logger);
  const client = slurmClient({
    server: f.slurmApiServer,
    tokenSource,
    apiVersion: f.slurmApiVersion,
    requestTimeoutMs: f.requestTimeout,
    retries: f.requestRetries,
    maxResponseBytes: f.maxResponseSize,
    tls: f.slurmApiCaFile ? { ca: readFile(f.slurmApiCaFile, '--slurm-api-ca-file') } : undefined,
    logger: settings.logger,
  });
  settings.logger.info(
    { server: f.slurmApiServer, auth: tokenSource.describe(), jobSource: f.jobSource },
    'slurmrestd client configured',
  );
  const topology = topologySource(f, env);
  return {
    ...settings,
    disabledMetrics,
    source: {
      api: client,
      jobSource: f.jobSource,
      accountingLookbackMs: lookbackMs ?? 0,
      clusterName: f.clusterName,
      optional: f.optionalCollectors,
      accountingLimits: f.accountingLimits,
      ...(topology ? { topology: (signal: AbortSignal) => topology.read(signal) } : {}),
    },
    maxInflight: f.maxCollectorInflight,
    userAccountMetrics: f.userAccountMetrics,
    serverLabel: redactUrl(f.slurmApiServer),
    close: () => {
      client.close();
      topology?.close();
    },
  };
}

/** The client's own checks (a server URL with credentials, a bad protocol) are configuration errors. */
function slurmClient(o: ConstructorParameters<typeof SlurmClient>[0]): SlurmClient {
  try {
    return new SlurmClient(o);
  } catch (err) {
    throw new ConfigError(`--slurm-api-server: ${(err as Error).message}`);
  }
}

function readFile(path: string, what: string): Buffer {
  try {
    return fs.readFileSync(path);
  } catch (err) {
    throw new ConfigError(`${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

export function clusterCommand(env: Env): Command {
  const cmd = addClusterOptions(
    new Command('cluster').description('cluster agent: Slurm node, job and controller metrics from slurmrestd'),
  ).option('--once', 'run one collection, print the Prometheus exposition to stdout and exit');
  return keepRefusals(cmd).action(async (f: ClusterFlags, self: Command) => {
    const opts = clusterAgentOptions(f, env, refusals(self));
    if (f.once) {
      const once = await runClusterOnce(opts);
      printExposition(once.text);
      // Scripts can tell a partial collection from a full one.
      if (once.failed.length > 0)
        throw new CollectionIncomplete(`collection incomplete: ${once.failed.join(', ')} failed (see the log)`);
      return;
    }
    await runUntilSignal(() => startClusterAgent(opts), opts.logger);
  });
}
