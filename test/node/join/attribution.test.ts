import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { attribute, EMPTY_STATE, judgePorts, type AttributionState } from '../../../src/node/join/attribution.js';
import { increase } from '../../../src/node/read/hca.js';
import type { DeviceHolders, JobAllocation, NodeSnapshot } from '../../../src/node/join/snapshot.js';
import type { UnreadableProcess } from '../../../src/node/read/unreadable.js';

interface Setup {
  jobs?: { key: string; jobId?: string }[];
  holders?: Record<string, Partial<DeviceHolders>>;
  gaps?: string[];
  counters?: Record<string, Record<string, bigint>>;
  atMs?: number;
  unreadable?: UnreadableProcess[];
  devices?: string[];
}

const DEVICES = ['mlx5_0', 'mlx5_1'];

function snap(s: Setup): NodeSnapshot {
  const allocations: JobAllocation[] = (s.jobs ?? []).map((j) => ({
    key: j.key,
    id: j.jobId ?? 'sXXXXXXXXXXXXX',
    idKind: j.jobId ? 'jobid' : 'sluid',
    layout: 'v2',
    scope: 'x',
    pids: [],
    stepdPids: [],
    procsFiles: [],
    gaps: [],
    ...(j.jobId ? { jobId: j.jobId } : { unresolved: 'test' }),
  }));
  const holders = new Map(
    Object.entries(s.holders ?? {}).map(([d, h]) => [
      d,
      {
        allocations: h.allocations ?? [],
        nonJobPids: h.nonJobPids ?? [],
        jobPids: h.jobPids ?? [],
        jobEvidence: new Map(),
        nonJobEvidence: new Map(),
        paths: new Map(),
      },
    ]),
  );
  return {
    atMs: s.atMs ?? 0,
    hca: {
      present: true,
      hcas: (s.devices ?? DEVICES).map((device) => ({
        device,
        ports: [{ port: '1', counters: new Map(Object.entries(s.counters?.[device] ?? {})) }],
      })),
    },
    allocations,
    scopes: [],
    holders,
    gpus: { present: false, units: [] },
    gpuHolders: new Map(),
    gaps: s.gaps ?? [],
    unreadable: s.unreadable ?? [],
    rdma: new Map(),
    slurmCgroups: { found: true, searched: '' },
    holderNames: new Map(),
    problems: [],
    stats: { processes: 0, fdLinksRead: 0, fdsStated: 0, fdsSkipped: 0, fdProbes: new Map(), coveredByRdmaCgroup: 0 },
  };
}

const status = (s: NodeSnapshot, device: string) => judgePorts(s).find((v) => v.device === device)?.status;

describe('port verdicts', () => {
  const jobs = [
    { key: 'a', jobId: '1' },
    { key: 'b', jobId: '2' },
  ];

  it('sole: one job, nothing else, full knowledge', () => {
    const s = snap({ jobs, holders: { mlx5_0: { allocations: ['a'] } } });
    const v = judgePorts(s).find((x) => x.device === 'mlx5_0');
    expect(v).toMatchObject({ status: 'sole', soleJobId: '1', jobs: ['1'] });
    expect(status(s, 'mlx5_1')).toBe('idle');
  });

  it('shared: two jobs on one device, whatever else', () => {
    expect(status(snap({ jobs, holders: { mlx5_0: { allocations: ['a', 'b'], nonJobPids: [9] } } }), 'mlx5_0')).toBe(
      'shared',
    );
  });

  it('nonjob: a process outside Slurm holds the device too', () => {
    expect(status(snap({ jobs, holders: { mlx5_0: { allocations: ['a'], nonJobPids: [9] } } }), 'mlx5_0')).toBe(
      'nonjob',
    );
    expect(status(snap({ jobs, holders: { mlx5_0: { nonJobPids: [9] } } }), 'mlx5_0')).toBe('nonjob');
  });

  it('incomplete: any gap suppresses every port, even an apparently sole one', () => {
    const s = snap({ jobs, holders: { mlx5_0: { allocations: ['a'] } }, gaps: ['PID 5: fd table unreadable'] });
    expect(judgePorts(s).map((v) => v.status)).toEqual(['incomplete', 'incomplete']);
    expect(judgePorts(s)[0]?.why).toContain('PID 5');
  });

  it('incomplete: the sole holder is an allocation whose job id is unresolved', () => {
    expect(status(snap({ jobs: [{ key: 'u' }], holders: { mlx5_0: { allocations: ['u'] } } }), 'mlx5_0')).toBe(
      'incomplete',
    );
  });

  it('a job with an unreadable process is sole nowhere, and no other job is sole where it could hold the device', () => {
    const blind: UnreadableProcess = {
      pid: 77,
      comm: 'hidden',
      cgroup: '/x',
      errno: 'EACCES',
      scope: 'job',
      allocation: 'a',
      job: '1',
      effect: 'job',
      policyEffect: 'job',
      cause: 'test',
    };
    const s = snap({
      jobs: [...jobs, { key: 'c', jobId: '3' }],
      devices: ['own', 'other', 'shared', 'nonjob', 'idle'],
      holders: {
        own: { allocations: ['a'] },
        other: { allocations: ['b'] },
        shared: { allocations: ['b', 'c'] },
        nonjob: { allocations: ['b'], nonJobPids: [9] },
      },
      unreadable: [blind],
    });
    expect(Object.fromEntries(judgePorts(s).map((v) => [v.device, v.status]))).toEqual({
      own: 'incomplete',
      other: 'incomplete',
      shared: 'shared',
      nonjob: 'nonjob',
      idle: 'incomplete',
    });
    const why = (d: string) => judgePorts(s).find((v) => v.device === d)?.why;
    expect(why('own')).toMatch(
      /job 1 has a process whose fd table cannot be read \(PID 77 hidden\): the devices it holds are not all known/,
    );
    expect(why('other')).toMatch(/job 1 .*PID 77.*may hold this device too/);
    // An outside process the policy ignored changes nothing.
    const ignored = snap({
      jobs,
      holders: { own: { allocations: ['a'] } },
      devices: ['own', 'idle'],
      unreadable: [{ ...blind, scope: 'outside', effect: 'ignored' }],
    });
    expect(judgePorts(ignored).map((v) => v.status)).toEqual(['sole', 'idle']);
  });

  it("a blind process's cost stays on the devices the kernel's context list leaves unknown (onlyOn)", () => {
    const jobs = [
      { key: 'a', jobId: '1' },
      { key: 'b', jobId: '2' },
    ];
    const blind: UnreadableProcess = {
      pid: 77,
      comm: 'hidden',
      cgroup: '/x',
      errno: 'uncertain',
      scope: 'job',
      allocation: 'a',
      job: '1',
      effect: 'job',
      policyEffect: 'job',
      contexts: { held: [], unknownOn: ['unknown'] },
      onlyOn: ['unknown'],
      cause: 'test',
    };
    const devices = ['other', 'unknown', 'idle'];
    const holders = { other: { allocations: ['b'] }, unknown: { allocations: ['b'] } };
    const statuses = (u: UnreadableProcess) =>
      Object.fromEntries(
        judgePorts(snap({ jobs, devices, holders, unreadable: [u] })).map((v) => [v.device, v.status]),
      );
    expect(statuses(blind)).toEqual({ other: 'sole', unknown: 'incomplete', idle: 'idle' });
    // Outside the jobs under strict: a gap on those devices only, not on the node.
    const outside: UnreadableProcess = { ...blind, scope: 'outside', effect: 'node' };
    expect(statuses(outside)).toEqual({ other: 'sole', unknown: 'incomplete', idle: 'idle' });
    const ports = judgePorts(snap({ jobs, devices, holders, unreadable: [outside] }));
    expect(ports.find((v) => v.device === 'unknown')?.why).toMatch(/PID 77 \(hidden/);
    // Without the limit the same process blinds every port it could share.
    const { onlyOn: _all, ...everywhere } = blind;
    expect(statuses(everywhere)).toEqual({ other: 'incomplete', unknown: 'incomplete', idle: 'incomplete' });
  });

  it('an unresolved allocation still counts as a user: two holders are shared', () => {
    const s = snap({
      jobs: [{ key: 'a', jobId: '1' }, { key: 'u' }],
      holders: { mlx5_0: { allocations: ['a', 'u'] } },
    });
    expect(status(s, 'mlx5_0')).toBe('shared');
  });
});

describe('job counters', () => {
  const one = [{ key: 'a', jobId: '1' }];
  const sole = { mlx5_0: { allocations: ['a'] } };
  const value = (st: AttributionState, counter: string) => st.jobs.get('1 mlx5_0 1')?.values.get(counter);

  function run(steps: { counters: Record<string, bigint>; sole?: boolean; alive?: boolean }[]): AttributionState[] {
    let st = EMPTY_STATE;
    return steps.map((step, i) => {
      const s = snap({
        jobs: step.alive === false ? [] : one,
        holders: step.sole === false ? { mlx5_0: { allocations: ['a'], nonJobPids: [7] } } : sole,
        counters: { mlx5_0: step.counters },
        atMs: i * 1000,
      });
      st = attribute(s, st).state;
      return st;
    });
  }

  it('starts at 0 when the job becomes sole user and adds the increases', () => {
    const st = run([
      { counters: { packet_seq_err: 100n } },
      { counters: { packet_seq_err: 130n } },
      { counters: { packet_seq_err: 131n } },
    ]);
    expect(st.map((s) => value(s, 'packet_seq_err'))).toEqual([0n, 30n, 31n]);
    expect(st[2]?.jobs.get('1 mlx5_0 1')?.startMs).toBe(0);
  });

  it('adds nothing while suppressed and resumes without going down', () => {
    const st = run([
      { counters: { port_xmit_data: 10n } },
      { counters: { port_xmit_data: 20n } },
      { counters: { port_xmit_data: 500n }, sole: false },
      { counters: { port_xmit_data: 600n } },
      { counters: { port_xmit_data: 650n } },
    ]);
    expect(st.map((s) => value(s, 'port_xmit_data'))).toEqual([0n, 10n, 10n, 10n, 60n]);
  });

  it('adds the wrapped difference of a 32-bit driver counter', () => {
    const st = run([{ counters: { packet_seq_err: 4294967290n } }, { counters: { packet_seq_err: 5n } }]);
    expect(value(st[1] as AttributionState, 'packet_seq_err')).toBe(11n);
  });

  it('treats a decrease of any other counter as a reset', () => {
    const st = run([{ counters: { port_xmit_data: 1000n } }, { counters: { port_xmit_data: 40n } }]);
    expect(value(st[1] as AttributionState, 'port_xmit_data')).toBe(40n);
  });

  it('adds nothing for a saturated PMA counter', () => {
    const st = run([
      { counters: { symbol_error: 65000n } },
      { counters: { symbol_error: 65535n } },
      { counters: { symbol_error: 65535n } },
    ]);
    expect(value(st[2] as AttributionState, 'symbol_error')).toBe(0n);
  });

  it('credits the increase made while a counter was missing from a few readings, the job staying sole', () => {
    const st = run([
      { counters: { port_xmit_data: 10n, packet_seq_err: 1n } },
      { counters: { port_xmit_data: 20n } },
      { counters: { port_xmit_data: 30n } },
      { counters: { port_xmit_data: 40n, packet_seq_err: 9n } },
    ]);
    expect(st.map((s) => value(s, 'packet_seq_err'))).toEqual([0n, 0n, 0n, 8n]);
    expect(value(st[3] as AttributionState, 'port_xmit_data')).toBe(30n);
  });

  it('credits nothing for a counter gap during which the job was not sole', () => {
    const st = run([
      { counters: { packet_seq_err: 1n } },
      { counters: {} },
      { counters: {}, sole: false },
      { counters: { packet_seq_err: 9n } },
      { counters: { packet_seq_err: 10n } },
    ]);
    expect(st.map((s) => value(s, 'packet_seq_err'))).toEqual([0n, 0n, 0n, 0n, 1n]);
  });

  it('frees the state of a job that ended', () => {
    const st = run([{ counters: { port_xmit_data: 1n } }, { counters: { port_xmit_data: 2n }, alive: false }]);
    expect(st[1]?.jobs.size).toBe(0);
  });

  it('never goes down and never adds more than the device saw, whatever the readings (property)', () => {
    const reading = fc.record({ v: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), sole: fc.boolean() });
    fc.assert(
      fc.property(
        fc.constantFrom('port_xmit_data', 'packet_seq_err', 'symbol_error', 'link_downed'),
        fc.array(reading, { minLength: 1, maxLength: 30 }),
        (counter, readings) => {
          const st = run(readings.map((r) => ({ counters: { [counter]: r.v }, sole: r.sole })));
          let prev = 0n;
          for (const s of st) {
            const v = value(s, counter) ?? 0n;
            expect(v >= prev).toBe(true);
            prev = v;
          }
          // Upper bound: the sum of each step's possible increase (wraps and resets included).
          let bound = 0n;
          for (let i = 1; i < readings.length; i++)
            bound += increase(counter, readings[i - 1]?.v ?? 0n, readings[i]?.v ?? 0n);
          expect(prev <= bound).toBe(true);
        },
      ),
    );
  });
});

describe('increase', () => {
  it('is the plain difference for a counter that went up', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 1n << 63n }),
        fc.bigInt({ min: 0n, max: 1n << 60n }),
        (a, d) => increase('port_rcv_data', a, a + d) === d,
      ),
    );
  });
});

describe('device counter start times', () => {
  it('keeps a start time while the counter grows and starts anew when it goes down', () => {
    const s1 = attribute(snap({ counters: { mlx5_0: { port_xmit_data: 5n } }, atMs: 1000 }), EMPTY_STATE).state;
    const s2 = attribute(snap({ counters: { mlx5_0: { port_xmit_data: 9n } }, atMs: 2000 }), s1).state;
    const s3 = attribute(snap({ counters: { mlx5_0: { port_xmit_data: 1n } }, atMs: 3000 }), s2).state;
    expect([s1, s2, s3].map((s) => s.deviceStarts.get('mlx5_0 1 port_xmit_data')?.startMs)).toEqual([1000, 1000, 3000]);
  });

  it('keeps the start time of a counter missing from a reading while its port is still there', () => {
    const s1 = attribute(snap({ counters: { mlx5_0: { port_xmit_data: 5n } }, atMs: 1000 }), EMPTY_STATE).state;
    const s2 = attribute(snap({ counters: { mlx5_0: {} }, atMs: 2000 }), s1).state;
    const s3 = attribute(snap({ counters: { mlx5_0: { port_xmit_data: 9n } }, atMs: 3000 }), s2).state;
    expect([s1, s2, s3].map((s) => s.deviceStarts.get('mlx5_0 1 port_xmit_data')?.startMs)).toEqual([1000, 1000, 1000]);
  });
});
