/** The cluster agent pointed at a real Slurm of test/support/real-slurm.ts, as the integration tests build it. */
import { Writable } from 'node:stream';
import { keyFileSigner } from '../../src/cluster/api/http/auth.js';
import { SlurmClient } from '../../src/cluster/api/client.js';
import { ClusterRunner } from '../../src/cluster/agent.js';
import type { JobSource } from '../../src/cluster/fetchers.js';
import { OPTIONAL_SUB_COLLECTORS } from '../../src/cluster/snapshot.js';
import { createLogger, type Logger } from '../../src/log.js';
import { expect } from 'vitest';
import { select, valueOf, type Sample } from './exposition.js';
import type { RealSlurm } from './real-slurm.js';
import { testOtlp } from './agents.js';

/** A JSON logger at warn and above whose lines are appended to `logs` (a test expects it empty). */
export function warnLogger(logs: string[]): Logger {
  const destination = new Writable({
    write: (c: Buffer, _e, done) => {
      logs.push(c.toString());
      done();
    },
  });
  return createLogger({ level: 'warn', format: 'json', destination });
}

/** A client of the cluster's slurmrestd with a token signed by its own key, pinned to `apiVersion` if given. */
export function realSlurmClient(slurm: RealSlurm, logger: Logger, apiVersion?: string): SlurmClient {
  return new SlurmClient({
    server: slurm.restUrl,
    tokenSource: keyFileSigner({ keyFile: slurm.jwtKeyPath, user: 'root' }),
    requestTimeoutMs: 15_000,
    ...(apiVersion ? { apiVersion } : {}),
    logger,
  });
}

export interface RealSlurmRunnerOptions {
  readonly jobSource: JobSource;
  readonly logs: string[];
  readonly apiVersion?: string;
  readonly now?: () => number;
  /** Push each collection as OTLP/HTTP protobuf to this URL (only when the test flushes). */
  readonly otlpUrl?: string;
  /** The bearer token file the push presents (the shipped Collector configs require one). */
  readonly otlpBearerTokenFile?: string;
}

/** A runner with every optional sub-collector and the limits, collecting only when the test asks. */
export function realSlurmRunner(slurm: RealSlurm, opts: RealSlurmRunnerOptions): ClusterRunner {
  const logger = warnLogger(opts.logs);
  const api = realSlurmClient(slurm, logger, opts.apiVersion);
  return new ClusterRunner({
    source: {
      api,
      jobSource: opts.jobSource,
      accountingLookbackMs: 3_600_000,
      clusterName: slurm.clusterName,
      optional: OPTIONAL_SUB_COLLECTORS,
      accountingLimits: true,
    },
    collectionIntervalMs: 3_600_000,
    maxInflight: 1,
    metrics: { host: '127.0.0.1', port: 0 },
    monitoring: { host: '127.0.0.1', port: 0 },
    resource: { serviceName: 'slurm-otel-cluster', serviceVersion: 'test', hostName: 'test' },
    logger,
    close: () => api.close(),
    ...(opts.now ? { now: opts.now } : {}),
    ...(opts.otlpUrl ? { otlp: testOtlp(opts.otlpUrl, opts.otlpBearerTokenFile) } : {}),
  });
}

/** `Key=Value Key=Value …`, as `scontrol -o show` prints one record. */
export function scontrolFields(line: string): Record<string, string> {
  return Object.fromEntries(
    line
      .trim()
      .split(/\s+/)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
}

/** The cycle and job counts sdiag prints (the main and the backfilling scheduler). */
export interface SdiagCounts {
  readonly cycles: number;
  readonly submitted: number;
  readonly started: number;
  readonly bfCycles: number;
}

export async function sdiagCounts(slurm: RealSlurm): Promise<SdiagCounts> {
  const text = (await slurm.run(['sdiag'])).stdout;
  const [main, backfill] = text.split('Backfilling stats') as [string, string];
  const n = (part: string, label: string) => Number(new RegExp(`${label}:\\s+(\\d+)`).exec(part)?.[1]);
  return {
    cycles: n(main, 'Total cycles'),
    submitted: n(main, 'Jobs submitted'),
    started: n(main, 'Jobs started'),
    bfCycles: n(backfill, 'Total cycles'),
  };
}

/** The scheduler counters of a collection taken between two sdiag readings lie between them. */
export function expectSchedulerBetween(samples: readonly Sample[], before: SdiagCounts, after: SdiagCounts): void {
  expect(Number.isInteger(before.cycles) && Number.isInteger(before.bfCycles)).toBe(true);
  const within = (name: string, lo: number, hi: number) => {
    const v = valueOf(samples, name) as number;
    expect(v, name).toBeGreaterThanOrEqual(lo);
    expect(v, name).toBeLessThanOrEqual(hi);
  };
  within('slurm_schedule_cycle_cnt', before.cycles, after.cycles);
  within('slurm_bf_cycle_cnt', before.bfCycles, after.bfCycles);
  within('slurm_sdiag_jobs_started', before.started, after.started);
  expect(valueOf(samples, 'slurm_sdiag_jobs_submitted')).toBe(after.submitted);
}

/** The squeue columns expectJobsAsSqueue reads, in its order. */
export const SQUEUE_JOB_FORMAT = '%A|%T|%P|%j|%u|%F|%K|%C|%r';

/** Every job squeue lists (rows of SQUEUE_JOB_FORMAT) has its info series with the same identity and state. */
export function expectJobsAsSqueue(samples: readonly Sample[], rows: readonly string[][]): void {
  const info = select(samples, 'slurm_job_info');
  expect(info.map((s) => s.labels.job_id).sort()).toEqual(rows.map((r) => r[0]).sort());
  for (const [id, state, partition, name, user, arrayJob, arrayTask, cpus, reason] of rows) {
    const labels = info.find((s) => s.labels.job_id === id)?.labels;
    expect(labels, `job ${id}`).toMatchObject({
      job_state: state,
      slurm_partition: partition,
      job_name: name,
      user_name: user,
    });
    if (arrayTask !== 'N/A') expect(labels).toMatchObject({ array_job_id: arrayJob, array_task_id: arrayTask });
    if (state === 'PENDING') expect(labels?.job_state_reason).toBe(reason);
    if (state === 'RUNNING') expect(valueOf(samples, 'slurm_job_cpus', { job_id: id as string })).toBe(Number(cpus));
  }
}
