/**
 * The agent process's own runtime health, under the names Prometheus client libraries use
 * (`process_*`, `nodejs_*`), so existing alerts and dashboards for Node services apply. Both
 * agents serve them on their self-monitoring endpoint; selfmon.ts reads them from Node's own
 * APIs. OTLP names carry no `_total`: the Prometheus side adds it to counters.
 *
 * Not the OpenTelemetry packages: @opentelemetry/instrumentation-runtime-node covers heap, event
 * loop and GC but not memory, CPU time or descriptors, and brings module-loader hooks an exporter
 * has no use for; @opentelemetry/host-metrics adds machine-wide series node_exporter already
 * serves, and no descriptors.
 */
import { checkCatalogue, defineMetric as spec } from './spec.js';

/** GC pause boundaries (seconds): young-generation pauses are sub-millisecond, full ones reach seconds. */
export const GC_BUCKETS: readonly number[] = [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5];

export const PROCESS_METRICS = {
  residentMemory: spec(
    'gauge',
    'process_resident_memory_bytes',
    'By',
    [],
    'Resident memory (RSS) of the agent process.',
  ),
  cpuSeconds: spec(
    'counter',
    'process_cpu_seconds',
    's',
    [],
    'CPU time (user + system) the agent process has used since it started.',
  ),
  openFds: spec(
    'gauge',
    'process_open_fds',
    '',
    [],
    'File descriptors the agent process holds open (entries of /proc/self/fd; absent where there is no /proc).',
  ),
  maxFds: spec(
    'gauge',
    'process_max_fds',
    '',
    [],
    'Soft limit on open file descriptors (Max open files in /proc/self/limits; absent where there is no /proc).',
  ),
  startTime: spec('gauge', 'process_start_time_seconds', 's', [], 'When the agent process started (Unix seconds).'),
  heapUsed: spec('gauge', 'nodejs_heap_size_used_bytes', 'By', [], 'V8 heap in use.'),
  heapTotal: spec('gauge', 'nodejs_heap_size_total_bytes', 'By', [], 'V8 heap allocated (used and free).'),
  eventLoopDelayP99: spec(
    'gauge',
    'nodejs_eventloop_delay_p99_seconds',
    's',
    [],
    '99th percentile of the event-loop delay since the previous scrape of this endpoint (sampled every 10 ms).',
  ),
  eventLoopDelayMax: spec(
    'gauge',
    'nodejs_eventloop_delay_max_seconds',
    's',
    [],
    'Longest event-loop delay since the previous scrape of this endpoint.',
  ),
  gcDuration: spec(
    'histogram',
    'nodejs_gc_duration_seconds',
    's',
    ['kind'],
    'Garbage-collection pauses by kind (minor, major, incremental, weakcb).',
    GC_BUCKETS,
  ),
} as const;

checkCatalogue(Object.values(PROCESS_METRICS));
