/**
 * Every body the fake slurmrestd can render, for every version and endpoint, at moments that
 * together hold every shape (see moments.ts): it must validate against that version's OpenAPI
 * schema, define no member the version does not, decode with the agent's own decoder without a
 * skipped element, and decode to exactly what the fake cluster holds (as that version can carry it).
 */
import { describe, expect, it } from 'vitest';
import { decodeLicense } from '../../src/cluster/api/decode/decode-licenses.js';
import { decodeAssociations, decodeQosList } from '../../src/cluster/api/decode/decode-limits.js';
import { decodePartition } from '../../src/cluster/api/decode/decode-partitions.js';
import { decodeReservation } from '../../src/cluster/api/decode/decode-reservations.js';
import { decodeShares } from '../../src/cluster/api/decode/decode-shares.js';
import { decodeList } from '../../src/cluster/api/decode/envelope.js';
import { parseNodeGres } from '../../src/cluster/api/decode/gres-detail.js';
import { expandHostlist } from '../../src/cluster/hostlist.js';
import { decoderFor } from '../../src/cluster/api/decode/versions.js';
import type { Decoded, SlurmJob, SlurmLimits, SlurmNode } from '../../src/cluster/model.js';
import {
  DEFAULT_RELEASES,
  FAKE_LICENSE_TOTAL,
  FROM_V0040,
  RENDER_VERSIONS,
  renderText,
} from '../../src/demo/slurm-render.js';
import type { Endpoint, RenderVersion } from '../../src/demo/slurm-render.js';
import { recorded } from '../cluster/fixtures.js';
import { coverage, interestingMoments } from './moments.js';
import { ENDPOINTS, errorsOf, missingMembers, unknownMembers, V0038_PATCHES, validatorFor } from './schema.js';
import { truthSeenThrough } from '../support/fake-cluster-truth.js';
import { V0038_RENDERERS } from '../support/slurm-render-v0038.js';
import { limitsTruth, sortTres } from '../support/fake-limits-truth.js';

const withV0038 = { renderers: V0038_RENDERERS };

const moments = interestingMoments(7);

function decode(version: RenderVersion, endpoint: Endpoint, body: unknown): Decoded<unknown> {
  const d = decoderFor(version);
  if (endpoint === 'nodes') return d.decodeNodes(body);
  if (endpoint === 'jobs') return d.decodeJobs(body);
  if (endpoint === 'diag') return d.decodeDiag(body);
  if (endpoint === 'partitions') return decodeList(body, 'partitions', decodePartition);
  if (endpoint === 'licenses') return decodeList(body, 'licenses', decodeLicense);
  if (endpoint === 'reservations') return decodeList(body, 'reservations', decodeReservation);
  if (endpoint === 'shares') return decodeShares(body);
  if (endpoint === 'qos') return decodeQosList(body);
  if (endpoint === 'associations') return decodeAssociations(body);
  return d.decodeAccountingJobs(body);
}

/** TRES limits in the truth's order (which TRES list a limit comes from is the decoder's business). */
function comparable(endpoint: Endpoint, item: unknown): unknown {
  if (endpoint !== 'qos' && endpoint !== 'associations') return item;
  const limits = item as SlurmLimits;
  return { ...limits, tres: sortTres(limits.tres) };
}

/** The decoded item restricted to the truth's members (undefined members must decode as absent). */
function pick(decoded: unknown, truth: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(truth)) out[k] = (decoded as Record<string, unknown>)[k];
  return out;
}

function expectedItems(version: RenderVersion, endpoint: Endpoint, m: (typeof moments)[number]): readonly object[] {
  const t = truthSeenThrough(version, m.truth);
  if (endpoint === 'nodes') return t.nodes;
  if (endpoint === 'jobs') return t.jobs;
  if (endpoint === 'diag') return [t.diag];
  if (endpoint === 'partitions') return partitionsFromNodes(t.nodes);
  if (endpoint === 'licenses') return [licenseFromJobs(t.jobs)];
  if (endpoint === 'reservations') return reservationFromNodes(t.nodes, t.nowMs);
  if (endpoint === 'shares') return sharesFromJobs(t.jobs);
  if (endpoint === 'qos') return limitsTruth(m.view, version).qos;
  if (endpoint === 'associations') return limitsTruth(m.view, version).associations;
  return t.accountingJobs;
}

/** sshare rows of the fake: root, then accounts and users by name, each with 100 per listed job. */
function sharesFromJobs(jobs: readonly SlurmJob[]): object[] {
  const accounts = [...new Set(jobs.map((j) => j.account ?? ''))].sort();
  const users = [...new Set(jobs.map((j) => `${j.account ?? ''}:${j.user_name ?? ''}`))].sort();
  const usage = (pred: (j: SlurmJob) => boolean): number => 100 * jobs.filter(pred).length;
  return [
    { name: 'root', parent: '', kind: 'account', usage: 100 * jobs.length },
    ...accounts.map((a) => ({ name: a, parent: 'root', kind: 'account', usage: usage((j) => j.account === a) })),
    ...users.map((u) => {
      const [a, name] = u.split(':') as [string, string];
      return {
        name,
        parent: a,
        kind: 'user',
        usage: usage((j) => j.account === a && j.user_name === name),
        fairshare_factor: 1 - usage((j) => j.account === a && j.user_name === name) / (100 * jobs.length),
      };
    }),
  ];
}

/** The fake's maintenance window on its first two nodes, an hour from the next full hour. */
function reservationFromNodes(nodes: readonly SlurmNode[], nowMs: number): object[] {
  const two = nodes.slice(0, 2);
  const start = Math.floor(nowMs / 1000 / 3600) * 3600 + 3600;
  return [
    {
      name: 'maint-window',
      partition: two[0]?.partitions[0],
      flags: ['MAINT', 'IGNORE_JOBS'],
      node_list: two.map((n) => n.name).join(','),
      node_count: 2,
      start_time: start,
      end_time: start + 3600,
    },
  ];
}

/** The fake's one pool: a license per running job, two reserved. */
function licenseFromJobs(jobs: readonly SlurmJob[]): object {
  const used = Math.min(FAKE_LICENSE_TOTAL - 2, jobs.filter((j) => j.state[0] === 'RUNNING').length);
  return {
    name: 'fluent',
    total: FAKE_LICENSE_TOTAL,
    used,
    free: FAKE_LICENSE_TOTAL - 2 - used,
    reserved: 2,
    remote: false,
  };
}

/** The partitions the nodes name, in node order, with their totals. */
function partitionsFromNodes(nodes: readonly SlurmNode[]): object[] {
  const names = [...new Set(nodes.flatMap((n) => n.partitions))];
  return names.map((name) => {
    const of = nodes.filter((n) => n.partitions.includes(name));
    return {
      name,
      nodes: of.map((n) => n.name).join(','),
      total_nodes: of.length,
      total_cpus: of.reduce((a, n) => a + (n.cpus ?? 0), 0),
    };
  });
}

describe('the moments cover every shape', () => {
  it('has a drained, a draining and a down node, arrays, GPU, unlimited, pending and finished jobs', () => {
    const c = coverage(moments);
    expect(
      Object.entries(c)
        .filter(([, ok]) => !ok)
        .map(([k]) => k),
    ).toEqual([]);
  });
});

for (const version of RENDER_VERSIONS) {
  describe(`${version}`, () => {
    // v0.0.38 (Slurm 22.05) has no /shares, and its limits are only recorded, not rendered.
    for (const endpoint of ENDPOINTS.filter((e) => version !== 'v0.0.38' || !FROM_V0040.has(e))) {
      it(`${endpoint} validates against the ${version} schema at every moment`, () => {
        const fn = validatorFor(version, endpoint);
        for (const m of moments) {
          const body = JSON.parse(renderText(m.view, version, endpoint, withV0038)) as unknown;
          expect(fn(body), `${m.label}: ${errorsOf(fn)}`).toBe(true);
          if (version !== 'v0.0.38') expect(unknownMembers(version, endpoint, body), m.label).toEqual([]);
        }
      });

      it(`${endpoint} decodes to what the cluster holds, nothing skipped`, () => {
        for (const m of moments) {
          const decoded = decode(version, endpoint, JSON.parse(renderText(m.view, version, endpoint, withV0038)));
          if (!decoded.ok) throw new Error(`${m.label}: ${decoded.message}`);
          expect(decoded.skipped, m.label).toBe(0);
          expect(decoded.meta.slurm_release).toBe(DEFAULT_RELEASES[version]);
          const expected = expectedItems(version, endpoint, m);
          expect(decoded.items.length, m.label).toBe(expected.length);
          decoded.items.forEach((item, i) => {
            const want = expected[i] as object;
            expect(pick(comparable(endpoint, item), want), `${m.label} #${i}`).toEqual(want);
          });
        }
      });
    }
  });
}

const V004X = RENDER_VERSIONS.filter((v) => v !== 'v0.0.38');

describe('each version writes every member its spec defines, of those the renderer writes at all', () => {
  for (const endpoint of ENDPOINTS) {
    it(`${endpoint}`, () => {
      const bodies = new Map(
        V004X.map((v) => [v, moments.map((m) => JSON.parse(renderText(m.view, v, endpoint)) as unknown)] as const),
      );
      expect(missingMembers(endpoint, bodies)).toEqual([]);
    });
  }
});

describe("the fake's QoS and associations", () => {
  const l = limitsTruth(moments[0]!.view, 'v0.0.45');
  const names = (owners: readonly SlurmLimits[]) => ({
    values: [...new Set(owners.flatMap((o) => Object.keys(o.values)))].sort(),
    tres: [...new Set(owners.flatMap((o) => o.tres.map((t) => t.limit)))].sort(),
  });

  it('set every limit the agent exports, so each member it reads carries a value somewhere', () => {
    expect(names(l.qos)).toEqual({
      values: [
        'grp_jobs',
        'grp_submit_jobs',
        'grp_wall_seconds',
        'max_jobs_per_account',
        'max_jobs_per_user',
        'max_submit_jobs_per_account',
        'max_submit_jobs_per_user',
        'max_wall_seconds',
        'priority',
        'usage_factor',
      ],
      tres: [
        'grp_tres',
        'grp_tres_minutes',
        'max_tres_minutes_per_job',
        'max_tres_per_account',
        'max_tres_per_job',
        'max_tres_per_node',
        'max_tres_per_user',
      ],
    });
    expect(names(l.associations)).toEqual({
      values: ['grp_jobs', 'grp_submit_jobs', 'max_jobs', 'max_submit_jobs', 'max_wall_seconds', 'priority', 'shares'],
      tres: ['grp_tres', 'grp_tres_minutes', 'max_tres_per_job', 'max_tres_per_node'],
    });
  });

  it("hold an account's own association, users' ones and one on a partition, and a QoS with nothing set", () => {
    expect(l.associations.some((a) => a.account !== 'root' && a.user === '')).toBe(true);
    expect(l.associations.some((a) => a.user !== '' && a.partition === '')).toBe(true);
    expect(l.associations.some((a) => a.user !== '' && a.partition !== '')).toBe(true);
    expect(l.qos.some((q) => Object.keys(q.values).length === 2 && q.tres.length === 0)).toBe(true);
  });

  it('v0.0.40 identifies an association by an object, later versions by a number; GrpSubmitJobs from v0.0.42', () => {
    const view = moments[0]!.view;
    const assoc = (v: RenderVersion) =>
      (JSON.parse(renderText(view, v, 'associations')) as { associations: { id: unknown }[] }).associations[0];
    expect(assoc('v0.0.40')?.id).toMatchObject({ account: 'root', id: 1 });
    expect(assoc('v0.0.41')?.id).toBe(1);
    const qosJobs = (v: RenderVersion) =>
      (JSON.parse(renderText(view, v, 'qos')) as { qos: { limits: { max: { jobs: object } } }[] }).qos[0]?.limits.max
        .jobs;
    expect(qosJobs('v0.0.41')).not.toHaveProperty('count');
    expect(qosJobs('v0.0.42')).toHaveProperty('count');
  });
});

describe('version-specific details', () => {
  const start = moments[0];
  const body = (version: RenderVersion, endpoint: Endpoint): Record<string, unknown> =>
    JSON.parse(renderText(start!.view, version, endpoint, withV0038)) as Record<string, unknown>;

  it('renders v0.0.38 only with a supplied renderer; a supplied one replaces a built-in one', () => {
    const view = moments[0]!.view;
    expect(() => renderText(view, 'v0.0.38', 'nodes')).toThrow(/no renderer for v0\.0\.38/);
    const own = { 'v0.0.44': () => ({ kind: 'object' as const, body: { own: true } }) };
    expect(renderText(view, 'v0.0.44', 'nodes', { renderers: own })).toBe('{"own":true}');
  });

  it('v0.0.38 speaks 22.05: lower-case node state, flags apart, string job state, meta.Slurm', () => {
    const nodes = body('v0.0.38', 'nodes')['nodes'] as { state: unknown; state_flags: unknown }[];
    expect(nodes.every((n) => typeof n.state === 'string' && n.state === n.state.toLowerCase())).toBe(true);
    expect(nodes.some((n) => (n.state_flags as string[]).includes('DRAIN'))).toBe(true);
    const jobs = body('v0.0.38', 'jobs');
    expect(typeof (jobs['jobs'] as { job_state: unknown }[])[0]?.job_state).toBe('string');
    expect(jobs['meta']).toMatchObject({
      plugin: { type: 'openapi/v0.0.38' },
      Slurm: { release: '22.05.8', version: { major: 22, minor: 5, micro: 8 } },
    });
  });

  it('a pending array master reads 4-7%4 on the controller and a hex bitmap in dbv0.0.38', () => {
    const jobs = body('v0.0.38', 'jobs')['jobs'] as { array_task_string: string; job_id: number }[];
    const master = jobs.find((j) => j.array_task_string === '4-7%4');
    expect(master).toBeDefined();
    const db = body('v0.0.38', 'slurmdb-jobs')['jobs'] as { job_id: number; array: { task?: string } }[];
    expect(db.find((j) => j.job_id === master?.job_id)?.array.task).toBe('0xF0');
  });

  it('v0.0.44+ carry schedule_cycle_sum above 2^32; v0.0.41–43 carry it wrapped to 32 bits', () => {
    const sum = (v: RenderVersion) =>
      (body(v, 'diag')['statistics'] as { schedule_cycle_sum?: number }).schedule_cycle_sum;
    expect(sum('v0.0.44')).toBeGreaterThan(2 ** 32);
    expect(sum('v0.0.45')).toBe(sum('v0.0.44'));
    expect(sum('v0.0.43')).toBe((sum('v0.0.44') as number) % 2 ** 32);
    expect(sum('v0.0.40')).toBeUndefined();
  });

  it('no-val structs from v0.0.40: an unlimited time limit is INFINITE, an unset array task is not set', () => {
    const jobs = body('v0.0.44', 'jobs')['jobs'] as {
      time_limit: unknown;
      array_task_id: unknown;
      array_job_id: unknown;
    }[];
    expect(jobs.some((j) => JSON.stringify(j.time_limit) === '{"set":false,"infinite":true,"number":0}')).toBe(true);
    expect(jobs.some((j) => JSON.stringify(j.array_task_id) === '{"set":false,"infinite":false,"number":0}')).toBe(
      true,
    );
  });

  it('slurmdbd jobs: state.current array, None assigned for pending, TRES arrays; SLUIDs in v0.0.45', () => {
    const db = body('v0.0.45', 'slurmdb-jobs')['jobs'] as {
      state: { current: unknown };
      nodes: string;
      tres: { requested: unknown[] };
      sluid: string;
    }[];
    expect(db.every((j) => Array.isArray(j.state.current))).toBe(true);
    expect(db.some((j) => j.nodes === 'None assigned')).toBe(true);
    expect(db.every((j) => j.tres.requested.length >= 4)).toBe(true);
    expect(db.every((j) => /^s[0-9A-HJKMNP-TV-Z]{13}$/.test(j.sluid))).toBe(true);
  });

  it('a realistic job object with job_resources is ~5 KB of compact JSON', () => {
    const jobs = body('v0.0.44', 'jobs')['jobs'] as { job_resources?: unknown }[];
    const sizes = jobs.filter((j) => j.job_resources !== undefined).map((j) => JSON.stringify(j).length);
    const mean = sizes.reduce((a, b) => a + b, 0) / sizes.length;
    expect(mean).toBeGreaterThan(4000);
    expect(mean).toBeLessThan(8000);
  });
});

describe('the schema checks can fail', () => {
  const start = moments[0];
  const parsed = (version: RenderVersion, endpoint: Endpoint): Record<string, unknown> =>
    JSON.parse(renderText(start!.view, version, endpoint, withV0038)) as Record<string, unknown>;

  it('rejects a 22.05-style string node state in v0.0.44, and flags a member v0.0.44 does not define', () => {
    const body = parsed('v0.0.44', 'nodes');
    const nodes = body['nodes'] as Record<string, unknown>[];
    (nodes[0] as Record<string, unknown>)['state'] = 'idle';
    expect(validatorFor('v0.0.44', 'nodes')(body)).toBe(false);
    (nodes[1] as Record<string, unknown>)['suspend_time'] = { set: false, infinite: false, number: 0 };
    expect(unknownMembers('v0.0.44', 'nodes', body)).toEqual(['nodes[].suspend_time']);
  });

  it('flags a member a version defines but leaves out', () => {
    const bodies = new Map(V004X.map((v) => [v, [parsed(v, 'nodes')]] as const));
    for (const n of (bodies.get('v0.0.44')?.[0] as { nodes: Record<string, unknown>[] }).nodes) delete n['gpu_spec'];
    expect(missingMembers('nodes', bodies)).toEqual(['v0.0.44: nodes[].gpu_spec']);
  });

  it('rejects a v0.0.4x state array in v0.0.38', () => {
    const body = parsed('v0.0.38', 'jobs');
    (body['jobs'] as Record<string, unknown>[])[0]!['job_state'] = ['RUNNING'];
    expect(validatorFor('v0.0.38', 'jobs')(body)).toBe(false);
  });

  it('each v0.0.38 spec patch is what the recorded 22.05.8 responses send', () => {
    const samples: Record<string, unknown> = {
      v0: (recorded('v0.0.38', '01-jobs-jobs.json') as { meta: unknown }).meta,
      dbv0: (recorded('v0.0.38', '01-jobs-slurmdb-jobs.json') as { meta: unknown }).meta,
      dbjob: (recorded('v0.0.38', '01-jobs-slurmdb-jobs.json') as { jobs: unknown[] }).jobs[0],
    };
    for (const p of V0038_PATCHES) {
      let v = samples[p.schema === 'v0.0.38_meta' ? 'v0' : p.schema === 'dbv0.0.38_meta' ? 'dbv0' : 'dbjob'];
      for (const k of p.path) v = (v as Record<string, unknown>)[k];
      expect(Number.isInteger(v), `${p.schema}.${p.path.join('.')}`).toBe(p.type === 'integer');
    }
  });
});

describe("the fake's GPU allocation per job and node", () => {
  const gpusOf = (entry: string) => parseNodeGres(entry).gpus.map((g) => Number(g.index));

  it.each(RENDER_VERSIONS)(
    "%s: running jobs' GRES indices on a node are distinct and together are the node's gres_used",
    (version) => {
      let checked = 0;
      for (const m of moments) {
        const jobs = (JSON.parse(renderText(m.view, version, 'jobs', withV0038)) as { jobs: RawJob[] }).jobs;
        const nodes = (JSON.parse(renderText(m.view, version, 'nodes', withV0038)) as { nodes: RawNode[] }).nodes;
        const held = new Map<string, number[]>();
        for (const j of jobs) {
          const running = Array.isArray(j.job_state) ? j.job_state[0] : j.job_state;
          if (running !== 'RUNNING') continue;
          const hosts = expandHostlist(j.nodes);
          j.gres_detail.forEach((e, i) => held.set(hosts[i]!, [...(held.get(hosts[i]!) ?? []), ...gpusOf(e)]));
        }
        for (const n of nodes) {
          const mine = (held.get(n.name) ?? []).sort((a, b) => a - b);
          expect(new Set(mine).size, `${m.label} ${n.name}`).toBe(mine.length);
          expect(mine, `${m.label} ${n.name}`).toEqual(gpusOf(n.gres_used).sort((a, b) => a - b));
          checked += mine.length;
        }
      }
      expect(checked).toBeGreaterThan(0);
    },
  );
});

interface RawJob {
  job_state: string | string[];
  nodes: string;
  gres_detail: string[];
}
interface RawNode {
  name: string;
  gres_used: string;
}
