/** Pending-reason counts and license pools, from hand-made jobs and slurmrestd license elements. */
import { describe, expect, it } from 'vitest';
import { decodeLicense } from '../../../src/cluster/api/decode/decode-licenses.js';
import { decodeAssociations, decodeQosList } from '../../../src/cluster/api/decode/decode-limits.js';
import { decodeList } from '../../../src/cluster/api/decode/envelope.js';
import { extraFamilySteps } from '../../../src/cluster/observe/extra.js';
import { observe, observeSteps } from '../../../src/cluster/observe.js';
import type { ClusterSnapshot } from '../../../src/cluster/snapshot.js';
import { runSteps, Slice } from '../../../src/steps.js';
import { decodeReservation } from '../../../src/cluster/api/decode/decode-reservations.js';
import { decodeShares } from '../../../src/cluster/api/decode/decode-shares.js';
import type { SlurmLicense, SlurmReservation } from '../../../src/cluster/model.js';
import { familyKeyErrors } from '../../support/catalogue-keys.js';
import { recorded } from '../fixtures.js';
import { job, node, ok, points, T0 } from './helpers.js';

const at = <T>(value: T) => ({ value, atMs: T0, seq: 1 });
/** The families beyond Slurm's own, straight through. */
const extraFamilies = (snap: ClusterSnapshot) => runSteps(extraFamilySteps(snap, new Slice()));

describe('pending reasons', () => {
  it('counts pending jobs by reason and partition, a multi-partition job in each, nothing else', () => {
    const jobs = [
      job('1', ['PENDING'], { state_reason: 'Priority', partition: 'cpu' }),
      job('2', ['PENDING'], { state_reason: 'Priority', partition: 'cpu,gpu' }),
      job('3', ['PENDING', 'REQUEUED'], { state_reason: 'Resources', partition: 'gpu' }),
      job('4', ['RUNNING'], { state_reason: 'None', partition: 'cpu' }),
      job('4', ['RUNNING'], { state_reason: 'None', partition: 'cpu' }),
    ];
    const p = points(extraFamilies({ atMs: T0, jobs: at(jobs) }), 'slurm_jobs_pending_reason');
    const by = Object.fromEntries(p.map((x) => [`${x.attributes.reason}/${x.attributes.partition}`, x.value]));
    expect(by).toEqual({ 'Priority/cpu': 2, 'Priority/gpu': 1, 'Resources/gpu': 1 });
  });

  it('no pending job: the family is there, empty', () => {
    expect(points(extraFamilies({ atMs: T0, jobs: at([job('1', ['RUNNING'])]) }), 'slurm_jobs_pending_reason')).toEqual(
      [],
    );
  });
});

describe('GPUs allocated per job and node', () => {
  const gpus = (jobs: Parameters<typeof job>[]) =>
    points(extraFamilies({ atMs: T0, jobs: at(jobs.map((a) => job(...a))) }), 'slurm_job_gpu_allocated').map(
      (p) =>
        `${p.attributes.job_id}@${p.attributes.node_name}#${p.attributes.gpu_index}:${p.attributes.gpu_type}=${p.value}`,
    );

  it("pairs each node's entry with the job's hosts in hostlist order, one series per GPU", () => {
    expect(
      gpus([
        ['7', ['RUNNING'], { nodes: 'gpu-[008,002]', gres_detail: ['gpu:h100:2(IDX:0-1)', 'gpu:3(IDX:1,4-5)'] }],
        ['8', ['RUNNING'], { nodes: 'gpu-002', gres_detail: ['gpu:h100:1(IDX:2),nic:1(IDX:0)'] }],
      ]),
    ).toEqual([
      '7@gpu-008#0:h100=1',
      '7@gpu-008#1:h100=1',
      '7@gpu-002#1:=1',
      '7@gpu-002#4:=1',
      '7@gpu-002#5:=1',
      '8@gpu-002#2:h100=1',
    ]);
  });

  it('only running jobs; a node without GRES, extra entries, an unreadable hostlist or entry give none', () => {
    expect(
      gpus([
        ['1', ['PENDING'], { nodes: 'gpu-001', gres_detail: ['gpu:1(IDX:0)'] }],
        ['2', ['COMPLETING'], { nodes: 'gpu-001', gres_detail: ['gpu:1(IDX:0)'] }],
        ['3', ['RUNNING'], { nodes: 'cpu-[001-002]', gres_detail: ['', 'gpu:1(IDX:0)', 'gpu:1(IDX:1)'] }],
        ['4', ['RUNNING'], { nodes: 'gpu-[001', gres_detail: ['gpu:1(IDX:0)'] }],
        ['5', ['RUNNING'], { nodes: 'gpu-003', gres_detail: ['gpu:1(IDX:0),junk'] }],
        ['6', ['RUNNING'], { nodes: 'gpu-004', gres_detail: ['gpu:2(IDX:0),gpu:1(IDX:0)'] }],
        ['9', ['RUNNING'], { nodes: 'gpu-005' }],
      ]),
    ).toEqual(['3@cpu-002#0:=1', '5@gpu-003#0:=1', '6@gpu-004#0:=1']);
  });

  it('no job with GPUs: the family is there, empty', () => {
    expect(gpus([['1', ['RUNNING'], { nodes: 'n1', gres_detail: [] }]])).toEqual([]);
  });
});

describe('in pieces, as the agent publishes them', () => {
  it('pauses within both passes over the jobs where the slice is always due, and computes what a straight run does', () => {
    const jobs = Array.from({ length: 600 }, (_, i) =>
      i % 3 === 0
        ? job(String(i), ['PENDING'], { state_reason: 'Priority', partition: 'cpu,gpu' })
        : job(String(i), ['RUNNING'], { nodes: 'gpu-[001-002]', gres_detail: ['gpu:h100:2(IDX:0-1)', 'gpu:1(IDX:3)'] }),
    );
    const snap = { atMs: T0, jobs: at(jobs) };
    const steps = observeSteps(snap, T0, {}, new Slice(0));
    let pauses = 0;
    let r = steps.next();
    for (; r.done !== true; r = steps.next()) pauses++;
    // Pending reasons and allocated GPUs each ask the slice every 256 jobs.
    expect(pauses).toBe(2 * Math.floor(jobs.length / 256));
    expect(r.value).toEqual(observe(snap, T0));
    expect(points(r.value, 'slurm_jobs_pending_reason')).toHaveLength(2);
    expect(points(r.value, 'slurm_job_gpu_allocated')).toHaveLength(400 * 3);
  });
});

describe('licenses', () => {
  it("decodes every version's element and skips one without a name, keeping the rest", () => {
    const body = {
      licenses: [
        { LicenseName: 'matlab', Total: 10, Used: 3, Free: 5, Reserved: 2, Remote: false, LastConsumed: 3 },
        { Total: 4 },
        { LicenseName: 'ansys', Total: 2, Used: 0, Free: 2, Reserved: 0, Remote: true },
      ],
    };
    const d = decodeList<SlurmLicense>(body, 'licenses', decodeLicense);
    expect(d.ok && d.skipped).toBe(1);
    const f = extraFamilies({ atMs: T0, licenses: at(ok(d)) });
    expect(familyKeyErrors(f)).toEqual([]);
    expect(points(f, 'slurm_license_total').map((x) => [x.attributes.license, x.value])).toEqual([
      ['matlab', 10],
      ['ansys', 2],
    ]);
    expect(points(f, 'slurm_license_used').map((x) => x.value)).toEqual([3, 0]);
    expect(points(f, 'slurm_license_free').map((x) => x.value)).toEqual([5, 2]);
    expect(points(f, 'slurm_license_reserved').map((x) => x.value)).toEqual([2, 0]);
  });

  it('a count Slurm did not send is absent, not 0; no license sub-collector result, no families', () => {
    const f = extraFamilies({ atMs: T0, licenses: at([{ name: 'x', total: 3 }]) });
    expect(points(f, 'slurm_license_used')).toEqual([]);
    expect(extraFamilies({ atMs: T0 }).map((x) => x.spec.name)).toEqual([]);
  });
});

describe('reservations', () => {
  const body = {
    reservations: [
      {
        name: 'maint',
        partition: 'gpu',
        flags: ['maint', 'ignore_jobs'],
        node_list: 'n[1-2]',
        node_count: 2,
        core_count: 16,
        start_time: 1800000000,
        end_time: 1800003600,
        users: 'root',
        accounts: '',
      },
      {
        name: 'broken',
        flags: [],
        node_list: 'n[3-1]',
        node_count: 1,
        start_time: { set: true, infinite: false, number: 1800000000 },
        end_time: { set: false, infinite: true, number: 0 },
      },
    ],
  };
  const list = ok(decodeList<SlurmReservation>(body, 'reservations', decodeReservation));
  const nodes = [node('n1', ['IDLE', 'MAINTENANCE', 'RESERVED']), node('n2', ['MIXED', 'DRAIN'])];

  it('exports identity, times, sizes and the states of the reserved nodes', () => {
    const f = extraFamilies({ atMs: T0, reservations: at(list), nodes: at(nodes) });
    expect(familyKeyErrors(f)).toEqual([]);
    expect(points(f, 'slurm_reservation_info')[0]?.attributes).toEqual({
      reservation: 'maint',
      partition: 'gpu',
      flags: 'MAINT,IGNORE_JOBS',
      users: 'root',
      accounts: '',
      nodes: 'n[1-2]',
    });
    expect(points(f, 'slurm_reservation_start_time_seconds').map((p) => p.value)).toEqual([1800000000, 1800000000]);
    // An INFINITE end is no time at all: absent.
    expect(points(f, 'slurm_reservation_end_time_seconds').map((p) => [p.attributes.reservation, p.value])).toEqual([
      ['maint', 1800003600],
    ]);
    expect(points(f, 'slurm_reservation_cores').map((p) => p.value)).toEqual([16]);
    const states = Object.fromEntries(
      points(f, 'slurm_reservation_nodes_state').map((p) => [
        `${p.attributes.reservation}/${p.attributes.state}`,
        p.value,
      ]),
    );
    expect(states).toEqual({
      'maint/idle': 1,
      'maint/maint': 1,
      'maint/resv': 1,
      'maint/mixed': 1,
      // slurm_nodes_<state>'s names: a mixed node under DRAIN is draining, not drain.
      'maint/draining': 1,
    });
  });

  it('without a node list yet, the reservation families are served without node states', () => {
    const names = extraFamilies({ atMs: T0, reservations: at(list) }).map((f) => f.spec.name);
    expect(names).toContain('slurm_reservation_info');
    expect(names).not.toContain('slurm_reservation_nodes_state');
  });
});

describe('fairshare', () => {
  const v40 = {
    id: 2,
    name: 'phys',
    parent: 'root',
    partition: '',
    shares: { set: true, infinite: false, number: 10 },
    shares_normalized: { set: true, infinite: false, number: 0.25 },
    usage: 3600,
    usage_normalized: { set: true, infinite: false, number: 0.5 },
    effective_usage: 0.5,
    fairshare: { factor: 0.4, level: 0.8 },
    type: ['ASSOCIATION'],
  };
  const v44user = {
    id: 3,
    name: 'alice',
    parent: 'phys',
    partition: '',
    shares: { set: true, infinite: false, number: 1 },
    usage: 1800,
    usage_normalized: { set: false, infinite: false, number: 0 },
    effective_usage: { set: true, infinite: false, number: 0.25 },
    fairshare: { factor: { set: true, infinite: false, number: 0.6 }, level: { set: true, infinite: true, number: 0 } },
    type: ['USER'],
  };

  it('reads plain (v0.0.40) and struct (v0.0.42+) numbers; an account row has an empty user, a user row its account', () => {
    const rows = ok(
      decodeShares({ shares: { shares: [v40, v44user, { id: 9 }], total_shares: 11 }, errors: [], warnings: [] }),
    );
    expect(rows).toHaveLength(2);
    const f = extraFamilies({ atMs: T0, shares: at(rows) });
    expect(familyKeyErrors(f)).toEqual([]);
    const by = (name: string) => points(f, name).map((p) => [p.attributes.account, p.attributes.user, p.value]);
    expect(by('slurm_fairshare_factor')).toEqual([
      ['phys', '', 0.4],
      ['phys', 'alice', 0.6],
    ]);
    expect(by('slurm_fairshare_raw_shares')).toEqual([
      ['phys', '', 10],
      ['phys', 'alice', 1],
    ]);
    expect(by('slurm_fairshare_effective_usage')).toEqual([
      ['phys', '', 0.5],
      ['phys', 'alice', 0.25],
    ]);
    // Unset and infinite values are absent, not 0.
    expect(by('slurm_fairshare_norm_usage')).toEqual([['phys', '', 0.5]]);
    expect(by('slurm_fairshare_level')).toEqual([['phys', '', 0.8]]);
  });

  it('a body without the shares list is a decode failure, not an empty list', () => {
    expect(decodeShares({ errors: [] }).ok).toBe(false);
  });
});

describe('QoS and association limits', () => {
  it('reads the real 22.05 slurmdbd lists: only what is set (usage factor, shares) is exported', () => {
    const qos = ok(decodeQosList(recorded('v0.0.38', '00-idle-slurmdb-qos.json')));
    const assoc = ok(decodeAssociations(recorded('v0.0.38', '00-idle-slurmdb-associations.json')));
    const f = extraFamilies({ atMs: T0, limits: at({ qos, associations: assoc }) });
    expect(points(f, 'slurm_qos_limit').map((p) => [p.attributes.qos, p.attributes.limit, p.value])).toEqual([
      ['normal', 'priority', 0],
      ['normal', 'usage_factor', 1],
    ]);
    expect(points(f, 'slurm_qos_tres_limit')).toEqual([]);
    expect(points(f, 'slurm_association_limit').map((p) => p.attributes.limit)).toEqual(['shares', 'shares']);
  });

  it('reads v0.0.40+ structs: set limits in seconds and TRES, unset and infinite ones absent', () => {
    const n = (v: number) => ({ set: true, infinite: false, number: v });
    const unset = { set: false, infinite: false, number: 0 };
    const qosBody = {
      qos: [
        {
          name: 'high',
          priority: n(100),
          limits: {
            max: {
              active_jobs: { count: unset },
              jobs: {
                active_jobs: { per: { user: n(10), account: { set: true, infinite: true, number: 0 } } },
                per: { user: n(50) },
              },
              wall_clock: { per: { job: n(120) } },
              tres: {
                total: [
                  { type: 'cpu', count: 64 },
                  { type: 'gres', name: 'gpu', count: 8 },
                ],
                per: { user: [{ type: 'mem', count: 4096 }] },
              },
            },
          },
        },
      ],
    };
    const assocBody = {
      associations: [
        {
          account: 'phys',
          user: 'alice',
          partition: 'gpu',
          shares_raw: 5,
          max: {
            // As real slurmdbd sends GrpJobs=4 MaxWall=60 MaxJobs=3: `per.count` is the group limit.
            jobs: { per: { count: n(4), wall_clock: n(60) }, active: n(3) },
            tres: { per: { job: [{ type: 'node', count: 2 }] } },
          },
        },
      ],
    };
    const f = extraFamilies({
      atMs: T0,
      limits: at({ qos: ok(decodeQosList(qosBody)), associations: ok(decodeAssociations(assocBody)) }),
    });
    expect(familyKeyErrors(f)).toEqual([]);
    const q = Object.fromEntries(points(f, 'slurm_qos_limit').map((p) => [p.attributes.limit, p.value]));
    expect(q).toEqual({ priority: 100, max_jobs_per_user: 10, max_submit_jobs_per_user: 50, max_wall_seconds: 7200 });
    expect(points(f, 'slurm_qos_tres_limit').map((p) => [p.attributes.limit, p.attributes.tres, p.value])).toEqual([
      ['grp_tres', 'cpu', 64],
      ['grp_tres', 'gres/gpu', 8],
      ['max_tres_per_user', 'mem', 4096],
    ]);
    expect(
      points(f, 'slurm_association_limit').map((p) => [
        p.attributes.account,
        p.attributes.user,
        p.attributes.partition,
        p.attributes.limit,
        p.value,
      ]),
    ).toEqual([
      ['phys', 'alice', 'gpu', 'shares', 5],
      ['phys', 'alice', 'gpu', 'grp_jobs', 4],
      ['phys', 'alice', 'gpu', 'max_wall_seconds', 3600],
      ['phys', 'alice', 'gpu', 'max_jobs', 3],
    ]);
    expect(
      points(f, 'slurm_association_tres_limit').map((p) => [p.attributes.limit, p.attributes.tres, p.value]),
    ).toEqual([['max_tres_per_job', 'node', 2]]);
  });
});
