/**
 * The serving side every agent shares: the metrics endpoint (cached
 * exposition of the last collection), the self-monitoring endpoint, and a
 * cycle timer that never overlaps itself and never lets a cycle's failure
 * stop the agent.
 */
import v8 from 'node:v8';
import { redactUrl, type Logger } from '../log.js';
import { serve, textBody, type BindAddress, type Body, type Endpoint, type Route } from './http.js';
import { within, type OtlpOptions, type Pipeline } from './pipeline.js';
import type { GuardCounts } from './http-guard.js';
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
  /** Where the endpoints log what they refuse or cut (throttled). */
  readonly logger?: Logger;
  /** Where they count it (the agent's self-monitoring). */
  readonly counts?: GuardCounts;
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
    undefined,
    { name: 'metrics', logger: opts.logger, counts: opts.counts },
  );
  let monitoring: Endpoint;
  try {
    monitoring = await serve(
      opts.monitoring,
      { '/metrics': opts.selfMetrics, '/health': health },
      undefined,
      opts.security,
      undefined,
      { name: 'monitoring', logger: opts.logger, counts: opts.counts },
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

/**
 * Calls `fn` every `intervalMs` until the returned function is called. The timer is a parameter
 * so tests can fire ticks themselves instead of counting what a wall clock let happen.
 */
export type Repeat = (intervalMs: number, fn: () => void) => () => void;

export const repeatEvery: Repeat = (intervalMs, fn) => {
  const timer = setInterval(fn, intervalMs);
  return () => clearInterval(timer);
};

/** Runs `task` now and then every `intervalMs` after the previous run ended. */
export function every(intervalMs: number, task: () => Promise<void>, logger: Logger): Schedule {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  const tick = (): void => {
    running = task()
      .catch((err: unknown) => {
        // A cycle the stop aborted ended as asked: an ordinary stop, not a failure with a stack.
        if (stopped && err instanceof Error && err.name === 'AbortError')
          logger.info('cycle in flight cut short by the stop');
        else logger.error({ err }, 'cycle failed; keeping the last good data');
      })
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
  /** Its self-monitoring, where the endpoints count what they refuse or cut. */
  readonly self?: { readonly httpCounts: GuardCounts };
  selfExposition(): Promise<Body>;
  /** Runs one collection and publishes it. */
  collect(): Promise<T>;
  /** When the last collection was published (ms), undefined before the first. */
  lastAtMs(): number | undefined;
  /** Aborts work in flight (requests to a hung server, helper commands) so stop() is prompt. */
  abort?(): void;
  /**
   * An agent whose work has parts on their own schedules runs its own timer; without this the
   * runtime calls collect() every interval after the previous one ended.
   */
  schedule?(intervalMs: number): Schedule;
  /** Ends the agent's work; `finalPushMs` bounds the last OTLP push (a stop), else the SDK's timeout does. */
  shutdown(opts?: ShutdownOptions): Promise<void>;
}

export interface ShutdownOptions {
  readonly finalPushMs?: number;
}

/**
 * A stop is over within about two seconds whatever is in flight, well inside the grace period of
 * a service manager or an orchestrator: the work in progress gets `workGraceMs` once aborted,
 * then the agent's shutdown (restoring what it changed, while the last OTLP push has
 * `finalPushMs`) gets `shutdownMs`. What is still running then is logged and left behind.
 */
export const STOP_TIMINGS = { workGraceMs: 500, finalPushMs: 1_000, shutdownMs: 1_500 } as const;

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
  readonly v8Flags?: readonly string[];
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
  /** OTLP names of the data families not exported (--disable-metrics), checked at start-up. */
  readonly disabledMetrics?: ReadonlySet<string>;
  /** V8 flags the agent has set on itself (cli/v8-tuning.ts), for the start-up log. */
  readonly v8Flags?: readonly string[];
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
    v8Flags: settings.v8Flags,
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
      logger: o.logger,
      counts: agent.self?.httpCounts,
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
      ...runtimeFacts(o.v8Flags ?? []),
    },
    `${o.name} started`,
  );
  return {
    metricsUrl: served.metrics.url,
    monitoringUrl: served.monitoring.url,
    ready: () => loop.first,
    stop: () => stopAgent(agent, loop, served, o.logger),
  };
}

/**
 * The runtime the agent runs on, for the start-up log: which Node (the single executable embeds
 * its own, which may differ from the machine's), the heap limit V8 works under (what its flags
 * set, or what V8 derived from the machine's memory), in MiB, and the V8 flags the agent set on
 * itself after start (V8 cannot be asked which flags hold).
 */
function runtimeFacts(v8Flags: readonly string[]): { node: string; heap_limit_mib: number; v8_flags?: string } {
  return {
    node: process.version,
    heap_limit_mib: Math.round(v8.getHeapStatistics().heap_size_limit / 2 ** 20),
    ...(v8Flags.length > 0 ? { v8_flags: v8Flags.join(' ') } : {}),
  };
}

/** Aborts, closes the endpoints, shuts down: each step bounded, what is cut short logged. */
async function stopAgent(agent: Collecting, loop: Schedule, served: Served, logger: Logger): Promise<void> {
  const t = STOP_TIMINGS;
  const work = loop.stop();
  agent.abort?.();
  // Scrapes in progress and keep-alive connections are closed, not waited for.
  const closing = served.close();
  if (!(await within(Promise.all([work, closing]), t.workGraceMs)))
    logger.warn({ waited_ms: t.workGraceMs }, 'collection still running at stop: cut short');
  if (!(await within(agent.shutdown({ finalPushMs: t.finalPushMs }), t.shutdownMs)))
    logger.warn({ waited_ms: t.shutdownMs }, 'shutdown steps still running at stop: cut short');
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

/**
 * Pushes what is pending (OTLP; within `opts.finalPushMs` at a stop), then closes the pipeline and
 * the self-monitoring provider.
 */
export async function closeTelemetry(
  pipeline: Pipeline,
  self: { shutdown(): Promise<void> },
  opts: ShutdownOptions = {},
): Promise<void> {
  if (opts.finalPushMs !== undefined) await pipeline.finalPush(opts.finalPushMs);
  else await pipeline.flush().catch(() => undefined);
  await Promise.all([pipeline.shutdown(), within(self.shutdown(), 1_000)]);
}
