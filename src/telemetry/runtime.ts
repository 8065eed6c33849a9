/**
 * The serving side every agent shares: the metrics endpoint (cached
 * exposition of the last collection), the self-monitoring endpoint, and a
 * cycle timer that never overlaps itself and never lets a cycle's failure
 * stop the agent.
 */
import { redactUrl, type Logger } from '../log.js';
import { serve, textBody, type BindAddress, type Body, type Endpoint, type Route } from './http.js';
import type { OtlpOptions, Pipeline } from './pipeline.js';
import type { ResourceOptions } from './resource.js';
import type { WebConfig } from './webconfig.js';

export interface ServeOptions {
  readonly metrics: BindAddress;
  readonly monitoring: BindAddress;
  readonly pipeline: Pipeline;
  readonly selfMetrics: () => Promise<Body>;
  /** Extra routes on the metrics endpoint (landing page, JSON views). */
  readonly routes?: Readonly<Record<string, Route>>;
  readonly onRequest?: (path: string) => void;
  /** TLS and basic auth for both endpoints (web config file). */
  readonly security?: WebConfig;
  /** Whether the agent is healthy enough for /health to answer 200. */
  readonly healthy: () => { ok: boolean; detail: string };
}

export interface Served {
  readonly metrics: Endpoint;
  readonly monitoring: Endpoint;
  close(): Promise<void>;
}

export async function serveAgent(opts: ServeOptions): Promise<Served> {
  const health: Route = () => {
    const h = opts.healthy();
    return textBody(`${h.ok ? 'ok' : 'unhealthy'}: ${h.detail}\n`, h.ok ? 200 : 503);
  };
  const metrics = await serve(
    opts.metrics,
    { '/metrics': () => opts.pipeline.exposition, '/health': health, ...opts.routes },
    opts.onRequest,
    opts.security,
  );
  let monitoring: Endpoint;
  try {
    monitoring = await serve(
      opts.monitoring,
      { '/metrics': opts.selfMetrics, '/health': health },
      undefined,
      opts.security,
    );
  } catch (err) {
    await metrics.close();
    throw err;
  }
  return { metrics, monitoring, close: async () => void (await Promise.all([metrics.close(), monitoring.close()])) };
}

/** A running collection timer. */
export interface Schedule {
  /** Settles when the first collection has been published (or has failed and been logged). */
  readonly first: Promise<void>;
  /** Stops the timer and waits for the work in progress. */
  stop(): Promise<void>;
}

/** Runs `task` now and then every `intervalMs` after the previous run ended. */
export function every(intervalMs: number, task: () => Promise<void>, logger: Logger): Schedule {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  const tick = (): void => {
    running = task()
      .catch((err: unknown) => logger.error({ err }, 'cycle failed; keeping the last good data'))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs);
      });
  };
  tick();
  const first = running;
  return {
    first,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

/** What an agent hands the runtime: its pipeline, its self-monitoring and one collection step. */
export interface Collecting<T = unknown> {
  readonly pipeline: Pipeline;
  selfExposition(): Promise<Body>;
  /** Runs one collection and publishes it. */
  collect(): Promise<T>;
  /** When the last collection was published (ms), undefined before the first. */
  lastAtMs(): number | undefined;
  /** Aborts work in flight (requests to a hung server) so stop() is prompt. */
  abort?(): void;
  /**
   * An agent whose work has parts on their own schedules runs its own timer; without this the
   * runtime calls collect() every interval after the previous one ended.
   */
  schedule?(intervalMs: number): Schedule;
  shutdown(): Promise<void>;
}

export interface AgentRuntimeOptions {
  readonly name: string;
  readonly metrics: BindAddress;
  readonly monitoring: BindAddress;
  readonly intervalMs: number;
  readonly security?: WebConfig;
  readonly routes?: Readonly<Record<string, Route>>;
  readonly onRequest?: (path: string) => void;
  readonly logger: Logger;
  readonly otlpUrl?: string;
}

/**
 * What every agent is started with, whatever it collects: where it serves and pushes, what it
 * says it is, how it logs and how often it collects. The command line builds these once for both
 * agents (cli/export-options.ts); each agent's options add what it collects.
 */
export interface AgentSettings {
  readonly metrics: BindAddress;
  readonly monitoring: BindAddress;
  readonly resource: ResourceOptions;
  readonly otlp?: OtlpOptions;
  /** TLS and basic auth for both endpoints (--web-config-file). */
  readonly security?: WebConfig;
  readonly logger: Logger;
  readonly collectionIntervalMs: number;
}

/** The runtime's options for an agent started with `settings`, plus its own routes and request hook. */
export function runtimeOptions(
  name: string,
  settings: AgentSettings,
  own: Pick<AgentRuntimeOptions, 'routes' | 'onRequest'>,
): AgentRuntimeOptions {
  return {
    name,
    metrics: settings.metrics,
    monitoring: settings.monitoring,
    intervalMs: settings.collectionIntervalMs,
    security: settings.security,
    logger: settings.logger,
    otlpUrl: settings.otlp?.url,
    ...own,
  };
}

export interface RunningAgent {
  readonly metricsUrl: string;
  readonly monitoringUrl: string;
  /** Resolves when the first collection has been published (or has failed and been logged). */
  ready(): Promise<void>;
  stop(): Promise<void>;
}

/** Serves an agent and runs its collections on the interval until stop(). */
export async function startAgent(agent: Collecting, o: AgentRuntimeOptions): Promise<RunningAgent> {
  let served: Served;
  try {
    served = await serveAgent({
      metrics: o.metrics,
      monitoring: o.monitoring,
      pipeline: agent.pipeline,
      selfMetrics: () => agent.selfExposition(),
      routes: o.routes,
      security: o.security,
      onRequest: o.onRequest,
      healthy: () => {
        const at = agent.lastAtMs();
        return at === undefined
          ? { ok: false, detail: 'no collection yet' }
          : { ok: true, detail: `last collection ${new Date(at).toISOString()}` };
      },
    });
  } catch (err) {
    await agent.shutdown();
    throw err;
  }
  const loop = agent.schedule
    ? agent.schedule(o.intervalMs)
    : every(o.intervalMs, async () => void (await agent.collect()), o.logger);
  o.logger.info(
    {
      metrics: served.metrics.url,
      monitoring: served.monitoring.url,
      otlp: o.otlpUrl !== undefined ? redactUrl(o.otlpUrl) : 'off',
    },
    `${o.name} started`,
  );
  return {
    metricsUrl: served.metrics.url,
    monitoringUrl: served.monitoring.url,
    ready: () => loop.first,
    async stop() {
      const stopping = loop.stop();
      agent.abort?.();
      await stopping;
      await served.close();
      await agent.shutdown();
    },
  };
}

/** One collection rendered through the agent's own pipeline, then a clean shutdown (`--once`). */
export async function collectOnce<T>(agent: Collecting<T>): Promise<{ text: string; result: T }> {
  try {
    const result = await agent.collect();
    return { text: agent.pipeline.exposition.text, result };
  } finally {
    await agent.shutdown();
  }
}

/** Pushes what is pending (OTLP), then closes the pipeline and the self-monitoring provider. */
export async function closeTelemetry(pipeline: Pipeline, self: { shutdown(): Promise<void> }): Promise<void> {
  await pipeline.flush().catch(() => undefined);
  await Promise.all([pipeline.shutdown(), self.shutdown()]);
}
