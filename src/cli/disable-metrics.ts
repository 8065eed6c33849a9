/**
 * `--disable-metrics`: data families an agent does not export, each checked against that agent's
 * own catalogue at start-up (an unknown or a self-monitoring name stops the start, exit 2).
 */
import type { Option } from 'commander';
import {
  CLUSTER_EVENT_SPECS,
  CLUSTER_METRICS,
  CLUSTER_SELF_METRICS,
  EXTRA_SPECS,
  NATIVE_NODE_SHARED_METRICS,
  NATIVE_NODE_SHARED_OTLP_METRICS,
  NATIVE_SPECS,
  NATIVE_USER_ACCOUNT_SPECS,
} from '../cluster/metrics.js';
import { NODE_METRICS, NODE_SELF_METRICS } from '../node/metrics.js';
import { DisableMetricsError, disabledFamilies, type DisableCatalogue } from '../telemetry/disabled.js';
import { HTTP_GUARD_METRICS } from '../telemetry/http-metrics.js';
import { PROCESS_METRICS } from '../telemetry/process-metrics.js';
import { prometheusName, type MetricSpec } from '../telemetry/spec.js';
import { ConfigError } from './common.js';
import { envOption } from './export-options.js';

/** The self-monitoring families both agents serve beside their own. */
const SHARED_SELF: readonly MetricSpec[] = [...Object.values(PROCESS_METRICS), ...Object.values(HTTP_GUARD_METRICS)];

export const NODE_DISABLE_CATALOGUE: DisableCatalogue = {
  data: Object.values(NODE_METRICS),
  self: [...Object.values(NODE_SELF_METRICS), ...SHARED_SELF],
};

export const CLUSTER_DISABLE_CATALOGUE: DisableCatalogue = {
  data: [
    ...Object.values(CLUSTER_METRICS),
    ...CLUSTER_EVENT_SPECS,
    ...NATIVE_SPECS,
    ...Object.values(NATIVE_NODE_SHARED_METRICS),
    ...NATIVE_USER_ACCOUNT_SPECS,
    ...EXTRA_SPECS,
  ],
  self: [...Object.values(CLUSTER_SELF_METRICS), ...SHARED_SELF],
};

export function disableMetricsOption(prefix: string): Option {
  return envOption(prefix)(
    '--disable-metrics <names>',
    'comma-separated metric families not to export, by their names in docs/metrics.md (self-monitoring families cannot be disabled)',
    'DISABLE_METRICS',
  );
}

/** The node agent's families `list` turns off; undefined when none. */
export function nodeDisabledMetrics(list: string | undefined): ReadonlySet<string> | undefined {
  return checked(list, NODE_DISABLE_CATALOGUE);
}

/**
 * The cluster agent's families `list` turns off. A name is off wherever it is served: on `/metrics`
 * and `/metrics/nodes` alike where both use it, and under its `slurmctld_` name over OTLP.
 */
export function clusterDisabledMetrics(list: string | undefined): ReadonlySet<string> | undefined {
  const names = checked(list, CLUSTER_DISABLE_CATALOGUE);
  if (names === undefined) return undefined;
  const withAliases = new Set(names);
  for (const [key, spec] of Object.entries(NATIVE_NODE_SHARED_METRICS))
    if (names.has(spec.name))
      withAliases.add(NATIVE_NODE_SHARED_OTLP_METRICS[key as keyof typeof NATIVE_NODE_SHARED_METRICS].name);
  return withAliases;
}

/**
 * The demo runs both agents under one option: each name goes to the agent that exports it (both,
 * for a name both use), checked against the two catalogues together.
 */
export function demoDisabledMetrics(list: string | undefined): {
  readonly node?: ReadonlySet<string>;
  readonly cluster?: ReadonlySet<string>;
} {
  const both = {
    data: [...NODE_DISABLE_CATALOGUE.data, ...CLUSTER_DISABLE_CATALOGUE.data],
    self: [...NODE_DISABLE_CATALOGUE.self, ...CLUSTER_DISABLE_CATALOGUE.self],
  };
  if (checked(list, both) === undefined) return {};
  const names = (list ?? '').split(',').map((n) => n.trim());
  const of = (c: DisableCatalogue): string => names.filter((n) => knows(c, n)).join(',');
  return {
    node: nodeDisabledMetrics(of(NODE_DISABLE_CATALOGUE)),
    cluster: clusterDisabledMetrics(of(CLUSTER_DISABLE_CATALOGUE)),
  };
}

function knows(c: DisableCatalogue, name: string): boolean {
  return c.data.some((s) => s.name === name || prometheusName(s) === name);
}

function checked(list: string | undefined, catalogue: DisableCatalogue): ReadonlySet<string> | undefined {
  if (list === undefined) return undefined;
  try {
    const names = disabledFamilies(list, catalogue);
    return names.size === 0 ? undefined : names;
  } catch (err) {
    if (err instanceof DisableMetricsError) throw new ConfigError(`--disable-metrics: ${err.message}`);
    throw err;
  }
}
