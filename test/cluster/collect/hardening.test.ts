/**
 * The cluster agent's collection against a hostile slurmrestd (a fake one on loopback): error
 * bodies that echo the token, lists whose every element is malformed, errors[] next to data, a
 * renegotiation to an older API version, duplicate keys and job ids beyond 2^53.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { staticToken } from '../../../src/cluster/api/http/auth.js';
import { SlurmClient } from '../../../src/cluster/api/client.js';
import { failureKindOf, type FailureKind } from '../../../src/cluster/http/failure.js';
import { decoderFor } from '../../../src/cluster/api/decode/versions.js';
import { decodeListStream } from '../../../src/cluster/api/decode/stream-decode.js';
import { CollectionLoop, type LoopHooks } from '../../../src/cluster/collect.js';
import { makeFetchers } from '../../../src/cluster/fetchers.js';
import { observe } from '../../../src/cluster/observe.js';
import type { SubCollector } from '../../../src/cluster/snapshot.js';
import { createLogger, type Logger } from '../../../src/log.js';
import { silentLogger } from '../../support/log.js';
import { materialized } from '../../../src/telemetry/spec.js';
import { FaultServer } from '../api/fault-server.js';

const servers: FaultServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

function capture(): { logger: Logger; text: () => string } {
  const lines: string[] = [];
  const destination = new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString()), done()) });
  return { logger: createLogger({ level: 'debug', format: 'json', destination }), text: () => lines.join('') };
}

interface Counts {
  errors: string[];
  /** The failure kind of each failed run, as slurm_exporter_collector_error_kinds_total counts it. */
  kinds: FailureKind[];
  skipped: Partial<Record<SubCollector, number>>;
  apiErrors: Partial<Record<SubCollector, number>>;
  fieldsLost: Partial<Record<SubCollector, readonly string[]>>;
  badHostlists: Partial<Record<SubCollector, number>>;
  badGres: Partial<Record<SubCollector, number>>;
}

async function setup(opts: { versions?: string[]; token?: string } = {}) {
  const server = await FaultServer.start({ versions: opts.versions ?? ['v0.0.44'] });
  servers.push(server);
  const { logger, text } = capture();
  const tokenSource = opts.token !== undefined ? staticToken({ token: opts.token, userName: 'root' }) : undefined;
  const api = new SlurmClient({
    server: server.url,
    ...(tokenSource ? { tokenSource } : { tokenSource: staticToken({ token: 'unused-token-xyz', userName: 'root' }) }),
    retries: 0,
    logger,
  });
  const counts: Counts = {
    errors: [],
    kinds: [],
    skipped: {},
    apiErrors: {},
    fieldsLost: {},
    badHostlists: {},
    badGres: {},
  };
  const add = (m: Partial<Record<SubCollector, number>>, c: SubCollector, n: number) => (m[c] = (m[c] ?? 0) + n);
  const fetchers = makeFetchers({
    api,
    jobSource: 'controller',
    accountingLookbackMs: 3_600_000,
    // Soperator's three sub-collectors only: the fault server serves no /partitions.
    optional: [],
    logger,
    onSkipped: (c, n) => add(counts.skipped, c, n),
    onApiErrors: (c, n) => add(counts.apiErrors, c, n),
    onFieldsLost: (c, f) => (counts.fieldsLost[c] = f),
    onBadHostlists: (c, n) => add(counts.badHostlists, c, n),
    onBadGresDetail: (c, n) => add(counts.badGres, c, n),
  });
  const hooks: LoopHooks = {
    runFinished: (c, _ms, err) => {
      if (err === undefined) return;
      counts.errors.push(c);
      counts.kinds.push(failureKindOf(err));
    },
    skipped: () => undefined,
    stale: () => undefined,
    inflight: () => undefined,
  };
  const loop = new CollectionLoop({ fetchers, maxInflight: 1, hooks, logger });
  return { server, loop, counts, text, close: () => api.close() };
}

const body = (o: unknown) => ({
  kind: 'status' as const,
  status: 200,
  body: JSON.stringify(o),
  contentType: 'application/json',
});
const META = { meta: { plugin: { data_parser: 'data_parser/v0.0.44' } }, errors: [], warnings: [] };

describe('cluster collection against a hostile slurmrestd', () => {
  it('never logs a token that an error body echoes', async () => {
    const token = 'static-token-0123456789-secret';
    const t = await setup({ token });
    t.server.fault('/slurm/v0.0.44/jobs/', {
      kind: 'status',
      status: 500,
      contentType: 'application/json',
      body: JSON.stringify({
        errors: [{ error: 'Unspecified error', errno: -1, description: `rejected token ${token}` }],
      }),
    });
    const tick = await t.loop.tick();
    t.close();
    expect(tick.failed).toEqual(['jobs']);
    expect(t.text()).toMatch(/sub-collector failed/);
    expect(t.counts.kinds).toEqual(['auth']);
    expect(t.text()).toContain('rejected token <redacted>');
    expect(t.text()).not.toContain(token);
  });

  it.each([
    ['jobs', { jobs: [[1], [2], [3]] }],
    ['jobs', { jobs: Array.from({ length: 10_000 }, () => ({})) }],
    ['nodes', { nodes: [[1], 'x', null] }],
  ] as const)(
    'a %s list none of whose elements decodes is a failed run: last good data kept, skips counted',
    async (name, broken) => {
      const t = await setup();
      const first = await t.loop.tick();
      const good = first.snapshot[name]?.value.length ?? 0;
      expect(good).toBeGreaterThan(0);
      t.server.fault(`/slurm/v0.0.44/${name}/`, body({ ...META, ...broken }));
      const second = await t.loop.tick();
      t.close();
      expect(second.failed).toEqual([name]);
      expect(second.snapshot[name]?.value.length).toBe(good);
      expect(t.counts.errors).toEqual([name]);
      expect(t.counts.kinds).toEqual(['decode']);
      expect(t.counts.skipped[name]).toBe((broken as Record<string, unknown[]>)[name]?.length);
      expect(t.text()).toMatch(/all \d+ elements are malformed/);
    },
  );

  it('a failure that is not a call result (a bug on our side) is counted as internal', async () => {
    const kinds: FailureKind[] = [];
    const loop = new CollectionLoop({
      fetchers: {
        nodes: () => Promise.reject(new TypeError('x is undefined')),
        jobs: async () => [],
        diag: () => Promise.reject(new Error('never')),
      },
      maxInflight: 1,
      hooks: {
        runFinished: (_c, _ms, err) => void (err !== undefined && kinds.push(failureKindOf(err))),
        skipped: () => undefined,
        stale: () => undefined,
        inflight: () => undefined,
      },
      logger: silentLogger(),
    });
    expect((await loop.tick()).failed).toEqual(['nodes', 'diag']);
    expect(kinds).toEqual(['internal', 'internal']);
  });

  it('an empty list is still an empty cluster, not a failure', async () => {
    const t = await setup();
    t.server.fault('/slurm/v0.0.44/jobs/', body({ ...META, jobs: [] }));
    const tick = await t.loop.tick();
    t.close();
    expect(tick.failed).toEqual([]);
    expect(tick.snapshot.jobs?.value).toEqual([]);
  });

  it('counts errors[] that come with data, and logs each message once', async () => {
    const t = await setup();
    await t.loop.tick();
    const jobs = t.loop.snapshot().jobs?.value.length ?? 0;
    const errors = [{ error: 'partial result', error_number: 1234, description: 'slurmctld busy' }];
    t.server.fault('/slurm/v0.0.44/nodes/', body({ ...META, errors, nodes: [{ name: 'n1', state: ['IDLE'] }] }), 2);
    await t.loop.tick();
    const tick = await t.loop.tick();
    t.close();
    expect(tick.failed).toEqual([]);
    expect(tick.snapshot.nodes?.value.map((n) => n.name)).toEqual(['n1']);
    expect(tick.snapshot.jobs?.value.length).toBe(jobs);
    expect(t.counts.apiErrors).toEqual({ nodes: 2 });
    expect(t.text().match(/answered with data and errors/g)).toHaveLength(1);
    expect(t.text()).toContain('slurmctld busy');
  });

  it('counts jobs whose hostlist cannot be expanded, keeps them, and logs each distinct list once', async () => {
    const t = await setup();
    const job = (id: number, nodes: string) => ({ job_id: id, job_state: ['RUNNING'], name: 'j', nodes });
    const jobs = [job(1, 'gpu-[001-002]'), job(2, 'gpu-[003'), job(3, 'gpu-[003'), job(4, 'cpu-[9-1]')];
    t.server.fault('/slurm/v0.0.44/jobs/', body({ ...META, jobs }), 2);
    await t.loop.tick();
    const tick = await t.loop.tick();
    t.close();
    expect(tick.failed).toEqual([]);
    expect(tick.snapshot.jobs?.value.map((j) => j.job_id)).toEqual(['1', '2', '3', '4']);
    expect(t.counts.badHostlists).toEqual({ jobs: 6 });
    expect(t.text().match(/hostlist cannot be expanded/g)).toHaveLength(2);
    expect(t.text()).toContain('unbalanced \\"[\\" in hostlist item \\"gpu-[003\\"');
    expect(t.text()).toContain('cpu-[9-1]');
  });

  it("counts jobs' unreadable GRES entries per response, keeps the jobs and their readable GPUs, logs each once", async () => {
    const t = await setup();
    const job = (id: number, gres_detail: unknown) => ({
      job_id: id,
      job_state: ['RUNNING'],
      name: 'j',
      nodes: 'gpu-[001-002]',
      gres_detail,
    });
    const jobs = [
      job(1, ['gpu:h100:2(IDX:0-1)', 'gpu:h100:1(IDX:3)']),
      job(2, ['gpu:h100:1(IDX:2),gpu:h100:x(IDX:', 'gpu:h100:1(IDX:0)']),
      job(3, ['gpu:h100:1(IDX:2),gpu:h100:x(IDX:', { odd: true }]),
      job(4, 'not a list'),
    ];
    t.server.fault('/slurm/v0.0.44/jobs/', body({ ...META, jobs }), 2);
    await t.loop.tick();
    const tick = await t.loop.tick();
    t.close();
    expect(tick.failed).toEqual([]);
    expect(tick.snapshot.jobs?.value.map((j) => j.job_id)).toEqual(['1', '2', '3', '4']);
    // Per response: job 2's first entry, job 3's two; two responses.
    expect(t.counts.badGres).toEqual({ jobs: 6 });
    expect(t.text().match(/GRES detail not in a form Slurm prints/g)).toHaveLength(2);
    const gpus = observe(tick.snapshot, 0)
      .filter((f) => f.spec.name === 'slurm_job_gpu_allocated')
      .flatMap((f) =>
        materialized(f).points.map((p) => `${p.attributes.job_id}@${p.attributes.node_name}#${p.attributes.gpu_index}`),
      );
    expect(gpus.sort()).toEqual(
      ['1@gpu-001#0', '1@gpu-001#1', '1@gpu-002#3', '2@gpu-001#2', '2@gpu-002#0', '3@gpu-001#2'].sort(),
    );
  });

  it('counts and names the fields lost when slurmrestd is renegotiated to an older version', async () => {
    const t = await setup({ versions: ['v0.0.44'] });
    await t.loop.tick();
    t.server.versions = ['v0.0.38'];
    const tick = await t.loop.tick();
    t.close();
    expect(tick.failed).toEqual([]);
    expect(t.counts.fieldsLost.nodes?.length).toBeGreaterThan(0);
    expect(t.counts.fieldsLost.nodes).toContain('effective_cpus');
    expect(t.text()).toMatch(/lacks fields the previous one sent/);
    expect(t.text()).toContain('effective_cpus');
  });
});

describe('stream decoding as JSON.parse reads it', () => {
  async function* chunks(text: string, size = 7): AsyncIterable<Uint8Array> {
    for (let i = 0; i < text.length; i += size) yield Buffer.from(text.slice(i, i + size));
  }
  const decode = (text: string) => decodeListStream(chunks(text), 'jobs', decoderFor('v0.0.44').decodeJob);
  const job = (id: number | string, extra: Record<string, unknown> = {}) =>
    `{"job_id":${id},"job_state":["RUNNING"],"name":"j","nodes":"",${
      Object.entries(extra)
        .map(([k, v]) => `"${k}":${typeof v === 'string' ? v : JSON.stringify(v)}`)
        .join(',') || '"x":0'
    }}`;

  it('keeps the last of duplicate top-level keys, as JSON.parse does', async () => {
    const text = `{"jobs":[${job(1)},${job(2)}],"meta":{},"jobs":[${job(3)}]}`;
    const d = await decode(text);
    expect(d.ok && d.items.map((j) => j.job_id)).toEqual(['3']);
    const parsed = (JSON.parse(text) as { jobs: { job_id: number }[] }).jobs.map((j) => String(j.job_id));
    expect(parsed).toEqual(['3']);
    const gone = await decode(`{"jobs":[${job(1)}],"jobs":null}`);
    expect(gone.ok).toBe(false);
    const replaced = await decode(`{"jobs":null,"jobs":[${job(4)}]}`);
    expect(replaced.ok && replaced.items.map((j) => j.job_id)).toEqual(['4']);
  });

  it('keeps job ids beyond 2^53 exact, through the model and into the labels', async () => {
    const big = '18446744073709551613';
    const arrayId = '9007199254740993';
    const text = `{"jobs":[${job(big, { array_job_id: `{"set":true,"infinite":false,"number":${arrayId}}`, array_task_id: { set: true, infinite: false, number: 2 } })}]}`;
    const d = await decode(text);
    expect(d.ok).toBe(true);
    if (!d.ok) return;
    expect(d.items[0]?.job_id).toBe(big);
    expect(d.items[0]?.array_job_id).toBe(arrayId);
    const families = observe({ atMs: 0, jobs: { value: d.items, atMs: 0, seq: 1 } }, 0);
    const labels = families
      .flatMap((f) => materialized(f).points.map((p) => p.attributes['job_id']))
      .filter((v) => v !== undefined);
    expect(labels.length).toBeGreaterThan(0);
    expect(new Set(labels)).toEqual(new Set([big]));
  });

  it('does not touch a job id spelt inside a string', async () => {
    const d = await decode(`{"jobs":[${job(7, { comment: '"see \\"job_id\\":12345678901234567890"' })}]}`);
    expect(d.ok && d.items[0]?.job_id).toBe('7');
  });
});
