/** Bad input: decoders must never throw, and must say what was wrong. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as v0038 from '../../../../src/cluster/api/decode/decode-v0038.js';
import * as v004x from '../../../../src/cluster/api/decode/decode-v004x.js';
import { decodeListStream } from '../../../../src/cluster/api/decode/stream-decode.js';
import type { Decoded, ItemResult } from '../../../../src/cluster/model.js';
import { built, recorded } from '../../fixtures.js';
import { turnsDuring } from '../../../support/turns.js';

const FAMILIES = { v0038, v004x } as const;
const LIST_DECODERS = ['decodeNodes', 'decodeJobs', 'decodeAccountingJobs', 'decodeDiag'] as const;

function failure(d: Decoded<unknown>) {
  if (d.ok) throw new Error('expected a failure');
  return d;
}

describe.each(Object.entries(FAMILIES))('%s: whole responses that cannot be used', (_, family) => {
  it('an HTML error page, null, a number, an array', () => {
    for (const name of LIST_DECODERS) {
      const html = failure(family[name]('<html><body><h1>502 Bad Gateway</h1></body></html>'));
      expect(html.kind).toBe('not_an_object');
      expect(html.message).toContain('"<html><body><h1>502 Bad Gateway'); // trimmed, not the whole page
      for (const body of [null, 42, [], undefined, true])
        expect(failure(family[name](body)).kind).toBe('not_an_object');
    }
  });

  it('an object without the data member', () => {
    expect(failure(family.decodeNodes({ meta: {} })).kind).toBe('missing_data');
    expect(failure(family.decodeJobs({ jobs: 'lots' })).kind).toBe('missing_data');
    expect(failure(family.decodeDiag({ statistics: [] })).kind).toBe('missing_data');
  });

  it('errors[] with no data is a typed error carrying the messages', () => {
    const body = {
      meta: { plugin: { data_parser: 'data_parser/v0.0.44' } },
      errors: [{ error: 'Invalid user token', error_number: 1007, source: 'auth' }, 'bare string'],
      nodes: [],
    };
    const d = failure(family.decodeNodes(body));
    expect(d.kind).toBe('api_errors');
    expect(d.errors).toEqual([
      { error: 'Invalid user token', error_number: 1007, source: 'auth' },
      { error: 'bare string' },
    ]);
    expect(d.message).toContain('Invalid user token');
    expect(d.meta.data_parser).toBe('data_parser/v0.0.44');
    expect(failure(family.decodeDiag({ errors: [{ description: 'no stats' }] })).kind).toBe('api_errors');
  });

  it('errors[] alongside data is reported but not fatal', () => {
    const d = family.decodeNodes({
      errors: [{ error: 'partial' }],
      warnings: [{ description: 'w' }],
      nodes: [{ name: 'n1' }],
    });
    expect(d.ok).toBe(true);
    if (d.ok) {
      expect(d.items.map((n) => n.name)).toEqual(['n1']);
      expect(d.errors).toEqual([{ error: 'partial' }]);
      expect(d.warnings).toEqual([{ description: 'w' }]);
    }
  });
});

describe.each(Object.entries(FAMILIES))('%s: elements', (_, family) => {
  it('skips and counts elements that are not objects or have no name', () => {
    const bad = [null, 42, 'node1', [], {}, { name: '' }, { name: 5 }, { name: null }];
    const d = family.decodeNodes({ nodes: [...bad, { name: 'ok-1' }] });
    expect(d.ok).toBe(true);
    if (!d.ok) return;
    expect(d.items.map((n) => n.name)).toEqual(['ok-1']);
    expect(d.skipped).toBe(bad.length);
    expect(d.skip_reasons.map((r) => r.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(d.skip_reasons[0]?.reason).toBe('element is not an object');
    expect(d.skip_reasons[4]?.reason).toBe('node without a name');
  });

  it('caps the kept reasons but counts every skip', () => {
    const d = family.decodeJobs({ jobs: Array.from({ length: 500 }, () => ({ name: 'no id' })) });
    expect(d.ok && d.skipped).toBe(500);
    expect(d.ok && d.skip_reasons.length).toBeLessThanOrEqual(20);
  });

  it('reads fields of the wrong type as absent, keeping the rest', () => {
    const r = family.decodeNode({
      name: 'n1',
      state: 42,
      cpus: 'many',
      alloc_cpus: -3,
      real_memory: { set: true },
      free_mem: { set: false, number: 5 },
      free_memory: null,
      partitions: 'a,b',
      tres: ['cpu=1'],
      reason: { text: 'x' },
      boot_time: 'yesterday',
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.item.state).toEqual({ base: 'UNKNOWN', flags: [] });
    expect([
      r.item.cpus,
      r.item.alloc_cpus,
      r.item.real_memory,
      r.item.free_mem,
      r.item.tres,
      r.item.reason,
      r.item.boot_time,
    ]).toEqual([undefined, undefined, undefined, undefined, undefined, undefined, undefined]);
    expect(r.item.partitions).toEqual(['a', 'b']);
  });

  it('keeps unknown state words, upper-cased, and finds the base among them', () => {
    const r = family.decodeNode({ name: 'n1', state: ['something_new', 'idle', 'DRAIN', 'DRAIN', 'Blocked'] });
    expect(r.ok && r.item.state).toEqual({ base: 'IDLE', flags: ['SOMETHING_NEW', 'DRAIN', 'BLOCKED'] });
    const none = family.decodeNode({ name: 'n2', state: ['EXTERNAL'] });
    expect(none.ok && none.item.state).toEqual({ base: 'UNKNOWN', flags: ['EXTERNAL'] });
    const job = family.decodeJob({ job_id: 7, job_state: ['EXPEDITING', 'pending'] });
    expect(job.ok && job.item.state).toEqual(['PENDING', 'EXPEDITING']);
    const plus = family.decodeNode({ name: 'n3', state: 'idle+drain' });
    expect(plus.ok && plus.item.state).toEqual({ base: 'IDLE', flags: ['DRAIN'] });
  });

  it('accepts job ids as numbers or strings, and refuses missing ones', () => {
    expect(family.decodeJob({ job_id: 12 }).ok && family.decodeJob({ job_id: '12' }).ok).toBe(true);
    for (const bad of [{}, { job_id: null }, { job_id: '' }, { job_id: {} }, { job_id: Number.NaN }]) {
      const r = family.decodeJob(bad);
      expect(r.ok).toBe(false);
      expect(family.decodeAccountingJob(bad).ok).toBe(false);
    }
  });

  it('reads numbers in either wire form, with NO_VAL and INFINITE as absent', () => {
    const r = family.decodeJob({
      job_id: 1,
      cpus: { set: true, infinite: false, number: 4 },
      node_count: 2,
      time_limit: 4294967295,
      submit_time: { set: false, infinite: false, number: 0 },
      start_time: 0,
      end_time: { set: true, infinite: false, number: 1764000000 },
      array_job_id: 4294967294,
      memory_per_node: 1.8446744073709552e19,
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect([r.item.cpus, r.item.node_count, r.item.time_limit, r.item.time_limit_unlimited]).toEqual([
      4,
      2,
      undefined,
      true,
    ]);
    expect([
      r.item.submit_time,
      r.item.start_time,
      r.item.end_time,
      r.item.array_job_id,
      r.item.memory_per_node,
    ]).toEqual([undefined, undefined, 1764000000, undefined, undefined]);
  });

  it('skips malformed RPC rows in diag and counts them', () => {
    const d = family.decodeDiag({
      statistics: {
        server_thread_count: '3',
        rpcs_by_message_type: [{ message_type: 'REQUEST_PING', count: 1, total_time: 10 }, { count: 5 }, null],
        rpcs_by_user: [
          { user: 'root', count: 2, total_time: { set: true, infinite: false, number: 20 } },
          { user: 'x' },
        ],
      },
    });
    expect(d.ok).toBe(true);
    if (!d.ok) return;
    expect(d.skipped).toBe(3);
    expect(d.skip_reasons.map((r) => r.reason)).toEqual([
      expect.stringContaining('rpcs_by_message_type[1]'),
      expect.stringContaining('rpcs_by_message_type[2]'),
      expect.stringContaining('rpcs_by_user[1]'),
    ]);
    expect(d.items[0]?.server_thread_count).toBeUndefined();
    expect(d.items[0]?.rpcs_by_user).toEqual([
      { user: 'root', user_id: undefined, count: 2, total_time_us: 20, average_time_us: undefined },
    ]);
  });
});

describe('v0.0.38 state_flags', () => {
  it('merges state_flags, including ones this agent has never heard of', () => {
    const r = v0038.decodeNode({ name: 'n1', state: 'mixed', state_flags: ['DRAIN', 'power_down', 'Future_Flag', 7] });
    expect(r.ok && r.item.state).toEqual({ base: 'MIXED', flags: ['DRAIN', 'POWER_DOWN', 'FUTURE_FLAG'] });
  });
});

describe('decoders never throw', () => {
  const anyJson = fc.jsonValue({ maxDepth: 5 });

  it('on arbitrary JSON bodies', () => {
    fc.assert(
      fc.property(anyJson, (body) => {
        for (const family of Object.values(FAMILIES)) {
          for (const name of LIST_DECODERS) expect(typeof family[name](body).ok).toBe('boolean');
        }
      }),
      { numRuns: 300 },
    );
  });

  /** A real element with some of its members replaced by arbitrary JSON. */
  function mutated(base: Record<string, unknown>) {
    const keys = Object.keys(base);
    return fc.dictionary(fc.constantFrom(...keys), anyJson, { maxKeys: 8 }).map((patch) => ({ ...base, ...patch }));
  }

  it('on real elements with members replaced by junk', () => {
    const node = (built('v0.0.44', 'nodes.json') as { nodes: Record<string, unknown>[] }).nodes[1] as Record<
      string,
      unknown
    >;
    const job = (built('v0.0.44', 'jobs.json') as { jobs: Record<string, unknown>[] }).jobs[0] as Record<
      string,
      unknown
    >;
    const dbJob = (built('v0.0.44', 'slurmdb-jobs.json') as { jobs: Record<string, unknown>[] }).jobs[0] as Record<
      string,
      unknown
    >;
    const oldJob = (recorded('v0.0.38', '01-jobs-jobs.json') as { jobs: Record<string, unknown>[] }).jobs[3] as Record<
      string,
      unknown
    >;
    fc.assert(
      fc.property(mutated(node), mutated(job), mutated(dbJob), mutated(oldJob), (n, j, d, o) => {
        for (const family of Object.values(FAMILIES)) {
          expect(family.decodeNode(n).ok).toBe(typeof n['name'] === 'string' && n['name'] !== '');
          for (const jj of [j, o]) expect(typeof family.decodeJob(jj).ok).toBe('boolean');
          expect(typeof family.decodeAccountingJob(d).ok).toBe('boolean');
        }
      }),
      { numRuns: 300 },
    );
  });
});

async function* chunked(text: string, size: number): AsyncGenerator<Buffer> {
  const buf = Buffer.from(text, 'utf8');
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

describe('streamed decoding', () => {
  it('gives the same result as whole-body decoding, for any chunk size', async () => {
    const cases: [unknown, string, (b: unknown) => Decoded<unknown>, (e: unknown) => ItemResult<unknown>][] = [
      [built('v0.0.44', 'jobs.json'), 'jobs', v004x.decodeJobs, v004x.decodeJob],
      [built('v0.0.41', 'nodes.json'), 'nodes', v004x.decodeNodes, v004x.decodeNode],
      [built('v0.0.45', 'slurmdb-jobs.json'), 'jobs', v004x.decodeAccountingJobs, v004x.decodeAccountingJob],
      [recorded('v0.0.38', '07-recovered-jobs.json'), 'jobs', v0038.decodeJobs, v0038.decodeJob],
      [built('v0.0.44', 'jobs-error.json'), 'jobs', v004x.decodeJobs, v004x.decodeJob],
      [recorded('v0.0.38', '00-idle-slurmdb-jobs.json'), 'jobs', v0038.decodeAccountingJobs, v0038.decodeAccountingJob],
    ];
    for (const [body, key, whole, element] of cases) {
      const text = JSON.stringify(body, null, 1);
      for (const size of [1, 7, 4096]) {
        const streamed = await decodeListStream(chunked(text, size), key, element);
        expect(streamed).toEqual(whole(body));
      }
    }
  });

  it('counts an element with bad JSON as skipped', async () => {
    const d = await decodeListStream(
      chunked('{"nodes":[{"name":"a"},{"name":tru},{"name":"b"}],"errors":[]}', 5),
      'nodes',
      v004x.decodeNode,
    );
    expect(d.ok).toBe(true);
    if (!d.ok) return;
    expect(d.items.map((n) => n.name)).toEqual(['a', 'b']);
    expect(d.skipped).toBe(1);
    expect(d.skip_reasons[0]).toMatchObject({ index: 1, reason: expect.stringContaining('not valid JSON') });
  });

  it('reports a truncated body and an HTML page as malformed JSON', async () => {
    const text = JSON.stringify(built('v0.0.44', 'jobs.json'));
    const truncated = await decodeListStream(chunked(text.slice(0, text.length - 40), 1000), 'jobs', v004x.decodeJob);
    expect(truncated.ok).toBe(false);
    expect(!truncated.ok && truncated.kind).toBe('malformed_json');
    expect(!truncated.ok && truncated.message).toMatch(/truncated/);
    const html = await decodeListStream(chunked('<html>Service Unavailable</html>', 8), 'jobs', v004x.decodeJob);
    expect(!html.ok && html.kind).toBe('malformed_json');
  });

  it('gives the event loop a turn every slice while chunks are already there, and decodes the same', async () => {
    const body = built('v0.0.44', 'jobs.json');
    const text = JSON.stringify(body, null, 1);
    // The source's chunks come as microtasks: every turn seen was given by the decoder.
    const { value, turns } = await turnsDuring(() =>
      decodeListStream(chunked(text, 256), 'jobs', v004x.decodeJob, { sliceMs: 0 }),
    );
    expect(turns).toBeGreaterThanOrEqual(Math.floor(text.length / 256) - 1);
    expect(value).toEqual(v004x.decodeJobs(body));
  });

  it('lets errors from the byte source itself propagate', async () => {
    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.from('{"jobs":[');
      throw new Error('socket hang up');
    }
    await expect(decodeListStream(failing(), 'jobs', v004x.decodeJob)).rejects.toThrow('socket hang up');
  });
});
