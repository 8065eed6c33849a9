/**
 * The serving side every agent shares: the metrics endpoint (cached
 * exposition of the last collection), the self-monitoring endpoint, and a
 * cycle timer that never overlaps itself and never lets a cycle's failure
 * stop the agent.
 */
import type { Logger } from '../log.js';
import { serve, textBody, type BindAddress, type Endpoint, type Route } from './http.js';
import type { Pipeline } from './pipeline.js';
import type { WebConfig } from './webconfig.js';

export interface ServeOptions {
  readonly metrics: BindAddress;
  readonly monitoring: BindAddress;
  readonly pipeline: Pipeline;
  readonly selfMetrics: () => Promise<import('./http.js').Body>;
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
  const metrics = await serve(opts.metrics, { '/metrics': () => opts.pipeline.exposition, '/health': health, ...opts.routes }, opts.onRequest, opts.security);
  let monitoring: Endpoint;
  try {
    monitoring = await serve(opts.monitoring, { '/metrics': opts.selfMetrics, '/health': health }, undefined, opts.security);
  } catch (err) {
    await metrics.close();
    throw err;
  }
  return { metrics, monitoring, close: async () => void (await Promise.all([metrics.close(), monitoring.close()])) };
}

/** Runs `task` now and then every `intervalMs` after the previous run ended. */
export function every(intervalMs: number, task: () => Promise<void>, logger: Logger): { first: Promise<void>; stop(): Promise<void> } {
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
