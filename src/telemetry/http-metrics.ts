/**
 * What the agents' HTTP endpoints refuse or cut to keep serving scrapers (http-guard.ts,
 * auth-queue.ts): both agents serve these on their self-monitoring endpoint, read from
 * their SelfMonitor's httpCounts at each scrape. `endpoint` is `metrics` or `monitoring`. OTLP names carry no
 * `_total`: the Prometheus side adds it to counters.
 */
import { AUTH_THROTTLE_REASONS, CONNECTION_CLOSE_REASONS } from './http-guard.js';
import { checkCatalogue, closedValues, defineMetric as spec } from './spec.js';

export const HTTP_GUARD_METRICS = {
  connectionsClosed: closedValues(
    spec(
      'counter',
      'slurm_otel_http_connections_closed',
      '',
      ['endpoint', 'reason'],
      `Connections an endpoint closed itself, by reason (${CONNECTION_CLOSE_REASONS.join(', ')}): refused, a newcomer turned away because every slot (refused_address: every slot its address may hold) had a request in progress; evicted, a connection with no request in progress (headers not finished, or idle between requests) closed to make room for a newcomer, from the address holding the most (evicted_address: its own address held too many); timeout, headers or request not complete in time (408); handshake_timeout, a TLS handshake not complete in time. A steady rise of evicted or timeout is a slowloris attack or clients too slow for the limits.`,
    ),
    { reason: CONNECTION_CLOSE_REASONS },
  ),
  authThrottled: closedValues(
    spec(
      'counter',
      'slurm_otel_http_auth_throttled',
      '',
      ['endpoint', 'reason'],
      `Requests with a password answered 429 without a comparison, by reason (${AUTH_THROTTLE_REASONS.join(', ')}): failures, the address failed too often in the window; address_queue, the address already has its two comparisons waiting; queue_full, the comparison queue is full of checks at least as deserving; displaced, a waiting check gave its place to one from a more deserving address (one that passed before, or has not failed).`,
    ),
    { reason: AUTH_THROTTLE_REASONS },
  ),
} as const;

checkCatalogue(Object.values(HTTP_GUARD_METRICS));
