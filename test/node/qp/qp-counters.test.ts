/**
 * Per-job QP counters: the JSON parsers on iproute2's shapes, the per-job
 * accumulation (property tests), and the whole path through a stand-in `rdma`
 * executable that answers from files and records what it was asked to set.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../support/log.js';
import { NodeRunner } from '../../../src/node/agent.js';
import { NodeCollector } from '../../../src/node/collect.js';
import type { Cycle } from '../../../src/node/join/cycle.js';
import { NODE_METRICS } from '../../../src/node/metrics.js';
import {
  accumulateQp,
  autoOff,
  EMPTY_QP_STATE,
  type QpCounter,
  type QpState,
} from '../../../src/node/qp/qp-counters.js';
import { parseLinkModes, parseQpCounters, parseQpResources } from '../../support/qp-text.js';
import { QpSource } from '../../../src/node/qp/qp-source.js';
import { attributionRows } from '../../../src/node/explain.js';
import { renderLanding } from '../../../src/node/landing.js';
import { demoTree } from '../../../src/demo/scenarios.js';
import { writeTree, type HcaSpec } from '../../../src/demo/nodetree.js';
import type { Point } from '../../../src/telemetry/spec.js';
import { nodeAgentOptions, startTestNodeAgent } from '../../support/agents.js';
import { familyKeyErrors } from '../../support/catalogue-keys.js';
import { capturingLogger } from '../../support/log.js';
import { type QpCounterJson } from '../../../src/demo/fake-rdma.js';
import { RecordingRdma } from '../../support/recording-rdma.js';
import { tmpDir } from '../../support/tmp.js';
import { waitFor } from '../../support/tools.js';

const points = (c: Cycle, name: string) => (c.families.find((f) => f.spec.name === name)?.points ?? []) as Point[];

describe('rdma JSON', () => {
  it('reads statistic qp show: counters by name, pid, QPs; kernel QPs have no pid; u64 values stay exact', () => {
    const text =
      '[{"ifindex":1,"ifname":"mlx5_0","port":1,"cntn":4,"qp-type":"RC","pid":41010,"comm":"py:1234567890123456789,","rx_write_requests":12,"out_of_sequence":0,"rdma_tx_bytes":18446744073709551615,"lqpn":[814,815]},' +
      '{"ifindex":1,"ifname":"mlx5_0","port":1,"cntn":5,"qp-type":"UD","rx_read_requests":3,"lqpn":[1]}]';
    const r = parseQpCounters(text);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value[0]).toEqual({
      device: 'mlx5_0',
      port: '1',
      cntn: 4,
      pid: 41010,
      qpns: [814, 815],
      values: new Map([
        ['rx_write_requests', 12n],
        ['out_of_sequence', 0n],
        ['rdma_tx_bytes', 18446744073709551615n],
      ]),
    });
    expect(r.value[1]?.pid).toBeUndefined();
  });

  it('reads resource show qp and statistic qp mode', () => {
    const qps = parseQpResources(
      '[{"ifindex":2,"ifname":"mlx5_1","port":1,"lqpn":9,"rqpn":77,"type":"RC","state":"RTS","rq-psn":1,"sq-psn":2,"path-mig-state":"MIGRATED","pdn":3,"pid":42010,"comm":"python"},{"ifindex":2,"ifname":"mlx5_1","lqpn":10,"type":"RC","state":"RESET","pid":42010}]',
    );
    expect(qps.ok && qps.value).toEqual([{ device: 'mlx5_1', port: '1', pid: 42010, qps: 1 }]);
    const modes = parseLinkModes(
      '[{"ifindex":1,"ifname":"mlx5_0","port":1,"mode":"qp auto off"},{"ifindex":2,"ifname":"mlx5_1","port":1,"mode":"qp auto type,pid on optional-counters off"}]',
    );
    expect(modes.ok && modes.value.map((m) => [m.device, autoOff(m.mode)])).toEqual([
      ['mlx5_0', true],
      ['mlx5_1', false],
    ]);
  });

  it('calls anything but a JSON array malformed', () => {
    for (const bad of ['', 'mlx5_0/1 cntn 4 pid 41010', '{"ifname":"mlx5_0"}', '[{"ifname":']) {
      expect(parseQpCounters(bad)).toMatchObject({ ok: false, kind: 'malformed' });
    }
  });
});

const counter = (
  pid: number,
  cntn: number,
  values: Record<string, bigint>,
  qpns: number[] = [cntn * 100],
): QpCounter => ({ device: 'mlx5_1', port: '1', cntn, pid, qpns, values: new Map(Object.entries(values)) });
const JOBS = new Map([
  [1, 'A'],
  [2, 'A'],
  [3, 'B'],
]);
const ALIVE = new Set(['A', 'B']);
const total = (s: QpState, job: string, name: string) => s.series.get(`${job} mlx5_1 1`)?.values.get(name);

function run(readings: QpCounter[][]): QpState[] {
  const out: QpState[] = [];
  let s = EMPTY_QP_STATE;
  readings.forEach((counters, i) => {
    s = accumulateQp(s, { seq: i + 1, counters }, JOBS, ALIVE, i * 1000);
    out.push(s);
  });
  return out;
}

describe('per-job accumulation', () => {
  it("starts at 0, sums the job's PIDs, adds a later counter whole, never drops a vanished one, keeps jobs apart", () => {
    const states = run([
      [counter(1, 1, { rx_write_requests: 100n }), counter(3, 2, { rx_write_requests: 7n })],
      [
        counter(1, 1, { rx_write_requests: 150n }),
        counter(2, 3, { rx_write_requests: 20n }),
        counter(3, 2, { rx_write_requests: 9n }),
      ],
      [counter(2, 3, { rx_write_requests: 25n }), counter(3, 2, { rx_write_requests: 10n })],
    ]);
    expect(states.map((s) => [total(s, 'A', 'rx_write_requests'), total(s, 'B', 'rx_write_requests')])).toEqual([
      [0n, 0n],
      [70n, 2n],
      [75n, 3n],
    ]);
    expect(states[2]?.series.get('A mlx5_1 1')?.startMs).toBe(0);
  });

  it('handles 32-bit wraps of Q counters, and a counter id reused by a new counter of the same PID', () => {
    const wrapped = run([[counter(1, 1, { out_of_sequence: 0xffff_fff0n })], [counter(1, 1, { out_of_sequence: 5n })]]);
    expect(total(wrapped[1] as QpState, 'A', 'out_of_sequence')).toBe(21n);
    const reused = run([
      [counter(1, 1, { out_of_sequence: 500n }, [10])],
      [counter(1, 1, { out_of_sequence: 5n }, [11])],
    ]);
    expect(total(reused[1] as QpState, 'A', 'out_of_sequence')).toBe(5n);
  });

  it('a process that replaced all its QPs while the kernel kept the counter continues (200, not 1,300)', () => {
    const states = run([
      [counter(1, 1, { rx_write_requests: 1000n }, [9])],
      [counter(1, 1, { rx_write_requests: 1100n }, [10])],
      [counter(1, 1, { rx_write_requests: 1200n }, [11])],
    ]);
    expect(states.map((s) => total(s, 'A', 'rx_write_requests'))).toEqual([0n, 100n, 200n]);
  });

  it('a counter name missing from an entry that stays continues from its last value when it returns (100, not 5,200)', () => {
    const states = run([
      [counter(1, 1, { out_of_sequence: 5000n, rx_write_requests: 1n })],
      [counter(1, 1, { out_of_sequence: 5100n, rx_write_requests: 2n })],
      [counter(1, 1, { rx_write_requests: 3n })],
      [counter(1, 1, { out_of_sequence: 5100n, rx_write_requests: 4n })],
    ]);
    expect(states.map((s) => total(s, 'A', 'out_of_sequence'))).toEqual([0n, 100n, 100n, 100n]);
    expect(total(states[3] as QpState, 'A', 'rx_write_requests')).toBe(3n);
  });

  it('the same reading seen twice adds nothing; ended jobs are dropped; unknown PIDs and kernel QPs count for no job', () => {
    let s = accumulateQp(
      EMPTY_QP_STATE,
      { seq: 1, counters: [counter(1, 1, { x: 1n }), counter(99, 2, { x: 5n })] },
      JOBS,
      ALIVE,
      0,
    );
    s = accumulateQp(s, { seq: 2, counters: [counter(1, 1, { x: 4n })] }, JOBS, ALIVE, 1000);
    expect(accumulateQp(s, { seq: 2, counters: [counter(1, 1, { x: 4n })] }, JOBS, ALIVE, 2000).series).toEqual(
      s.series,
    );
    expect([...s.series.keys()]).toEqual(['A mlx5_1 1']);
    expect(accumulateQp(s, undefined, JOBS, new Set(['B']), 3000).series.size).toBe(0);
  });

  const pidArb = fc.constantFrom(1, 2, 3);
  const readingArb = fc.array(
    fc.record({
      pid: pidArb,
      cntn: fc.integer({ min: 1, max: 4 }),
      v: fc.bigInt({ min: 0n, max: (1n << 32n) - 1n }),
      q: fc.integer({ min: 1, max: 3 }),
    }),
    { maxLength: 6 },
  );

  it('totals never go down, whatever the kernel shows (property)', () => {
    fc.assert(
      fc.property(fc.array(readingArb, { minLength: 1, maxLength: 8 }), (readings) => {
        const states = run(
          readings.map((r) =>
            r.map((c) => counter(c.pid, c.cntn, { out_of_sequence: c.v, rdma_tx_bytes: c.v }, [c.q])),
          ),
        );
        for (let i = 1; i < states.length; i++) {
          for (const [key, s] of (states[i - 1] as QpState).series) {
            for (const [name, v] of s.values)
              expect((states[i] as QpState).series.get(key)?.values.get(name) ?? -1n).toBeGreaterThanOrEqual(v);
          }
        }
      }),
    );
  });

  it("a job's total is the sum of its PIDs' increases when every counter stays (property)", () => {
    const stepsArb = fc.array(fc.array(fc.bigInt({ min: 0n, max: 1000n }), { minLength: 3, maxLength: 3 }), {
      minLength: 2,
      maxLength: 6,
    });
    fc.assert(
      fc.property(stepsArb, (steps) => {
        let cur = [0n, 0n, 0n];
        const readings = steps.map((inc) => {
          cur = cur.map((v, i) => v + (inc[i] as bigint));
          return cur.map((v, i) => counter(i + 1, i + 1, { rx_read_requests: v }));
        });
        const last = run(readings).at(-1) as QpState;
        const increase = (i: number) =>
          (readings.at(-1)?.[i]?.values.get('rx_read_requests') ?? 0n) -
          (readings[0]?.[i]?.values.get('rx_read_requests') ?? 0n);
        expect(total(last, 'A', 'rx_read_requests')).toBe(increase(0) + increase(1));
        expect(total(last, 'B', 'rx_read_requests')).toBe(increase(2));
      }),
    );
  });
});

/** Counters of the demo's two jobs sharing mlx5_1 (918002: PIDs 42010, 42011; 918003: 43010), and a kernel QP. */
function sharedPort(scale: number): QpCounterJson[] {
  const c = (pid: number, cntn: number, base: number, lqpn: number[]): QpCounterJson => ({
    ifname: 'mlx5_1',
    port: 1,
    cntn,
    pid,
    counters: {
      rx_write_requests: base * scale,
      out_of_sequence: scale,
      rdma_tx_bytes: base * 1000 * scale,
      rdma_rx_bytes: base * 900 * scale,
    },
    lqpn,
  });
  return [
    c(42010, 1, 10, [100, 101]),
    c(42011, 2, 20, [102]),
    c(43010, 3, 5, [200]),
    { ifname: 'mlx5_1', port: 1, cntn: 4, counters: { rx_write_requests: 999 * scale }, lqpn: [1] },
  ];
}

/**
 * The first cycle after a reading newer than `after`: a cycle asks for a reading only when none
 * is running, so cycles are repeated (adding nothing while the reading is the same) until one lands.
 */
async function cycleAfterReading(
  collector: NodeCollector,
  source: QpSource,
  after: number | undefined,
  nowMs: number,
): Promise<Cycle> {
  return waitFor('an rdma reading', () => {
    const c = collector.cycle(nowMs);
    return source.latest()?.seq !== after ? c : undefined;
  });
}

describe('--qp-counters observe with a stand-in rdma', () => {
  it('two jobs sharing an HCA each get their own series, summed over their PIDs, with bytes and coverage', async () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false }));
    const rdma = new RecordingRdma(tmpDir('fake-rdma-'));
    rdma.counters(sharedPort(1));
    rdma.resources(
      [100, 101, 102, 103]
        .map((lqpn) => ({ ifname: 'mlx5_1', port: 1, pid: 42010, lqpn }))
        .concat([{ ifname: 'mlx5_1', port: 1, pid: 43010, lqpn: 200 }]),
    );
    const source = new QpSource({ path: rdma.path, mode: 'observe', timeoutMs: 5000, logger: silentLogger() });
    const collector = new NodeCollector({ roots, fdRescanIntervalMs: 60_000, qp: source });
    try {
      collector.cycle(1000);
      const first = await cycleAfterReading(collector, source, undefined, 2000);
      expect(points(first, NODE_METRICS.jobQpCounters.name).length).toBeGreaterThan(0);
      expect(points(first, NODE_METRICS.jobQpCounters.name).every((p) => p.value === 0n)).toBe(true);
      rdma.counters(sharedPort(3));
      const c = await cycleAfterReading(collector, source, source.latest()?.seq, 3000);
      expect(c.attribution.verdicts.find((v) => v.device === 'mlx5_1')?.status).toBe('shared');
      const of = (name: string, job: string, counter?: string) =>
        points(c, name).find(
          (p) =>
            p.attributes.job_id === job &&
            p.attributes.device === 'mlx5_1' &&
            (counter === undefined || p.attributes.counter === counter),
        )?.value;
      expect(of(NODE_METRICS.jobQpCounters.name, '918002', 'rx_write_requests')).toBe(60n); // (10 + 20) × (3 − 1)
      expect(of(NODE_METRICS.jobQpCounters.name, '918003', 'rx_write_requests')).toBe(10n);
      expect(of(NODE_METRICS.jobQpCounters.name, '918002', 'out_of_sequence')).toBe(4n);
      expect(of(NODE_METRICS.jobQpTransmitBytes.name, '918002')).toBe(60_000n);
      expect(of(NODE_METRICS.jobQpReceiveBytes.name, '918003')).toBe(9_000n);
      expect(of(NODE_METRICS.jobQpCounted.name, '918002')).toBe(3);
      expect(of(NODE_METRICS.jobQps.name, '918002')).toBe(4);
      expect(of(NODE_METRICS.jobQps.name, '918003')).toBe(1);
      expect(new Set(points(c, NODE_METRICS.jobQpCounters.name).map((p) => p.attributes.job_id))).toEqual(
        new Set(['918002', '918003']),
      );
      expect(familyKeyErrors(c.families)).toEqual([]);
      // The landing page shows each job's own totals on the shared port, with the coverage.
      const html = renderLanding(attributionRows(c), {
        host: 'n',
        version: 't',
        atMs: 3000,
        refreshSeconds: 15,
        gaps: [],
        ...(c.qp ? { qp: c.qp } : {}),
      });
      const row = (job: string) =>
        new RegExp(
          `<tr data-qp-job="${job}"><td>${job}</td><td>mlx5_1/1</td><td>([^<]*)</td><td><code>([^]*?)</code>`,
        ).exec(html);
      expect(row('918002')?.[1]).toBe('3 of 4 QPs');
      expect(row('918003')?.[1]).toBe('1 of 1 QPs');
      expect(row('918002')?.[2]).toContain('out_of_sequence=4');
      // One statistic qp show per reading.
      const shows = rdma.calls().filter((l) => l === '-j statistic qp show').length;
      expect(shows - (source.latest()?.seq ?? 0)).toBeLessThanOrEqual(1); // a reading may be under way
      expect(rdma.sets()).toEqual([]);
    } finally {
      source.stop();
    }
  });

  it('keeps the last reading when rdma fails, and counts the failure', async () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false }));
    let errors = 0;
    const source = new QpSource({
      path: '/nonexistent/rdma',
      mode: 'observe',
      timeoutMs: 5000,
      logger: silentLogger(),
      onError: () => errors++,
    });
    const collector = new NodeCollector({ roots, fdRescanIntervalMs: 60_000, qp: source });
    collector.cycle(1000);
    await waitFor('the failed run counted', () => errors > 0);
    expect(errors).toBe(1);
    const c = collector.cycle(2000);
    expect(c.failed).toBeUndefined();
    expect(points(c, NODE_METRICS.jobQpCounters.name)).toEqual([]);
    source.stop();
  });
});

describe('--qp-counters manage with a stand-in rdma', () => {
  it('turns on only links in auto off, retries a busy one next cycle (logged once), and restores exactly what it changed', async () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false }));
    const rdma = new RecordingRdma(tmpDir('fake-rdma-'));
    rdma.modes([
      { ifname: 'mlx5_0', port: 1, mode: 'qp auto off' },
      { ifname: 'mlx5_1', port: 1, mode: 'qp auto type,pid on' },
      { ifname: 'mlx5_2', port: 1, mode: 'qp auto off' },
      { ifname: 'mlx5_3', port: 1, mode: 'qp auto type on' },
    ]);
    rdma.busy(['mlx5_2/1']);
    const { logger, lines } = capturingLogger();
    const runner = new NodeRunner(
      nodeAgentOptions(roots, { logger, qpCounters: { path: rdma.path, mode: 'manage', timeoutMs: 5000 } }),
    );
    // A cycle asks for a reading only when none is running: cycle until the n-th reading is taken.
    const reads = () => rdma.calls().filter((l) => l === '-j resource show qp').length;
    const cycleUntil = (n: number) =>
      waitFor(`reading ${n}`, async () => {
        if (reads() < n) await runner.cycle();
        return reads() >= n;
      });
    await cycleUntil(1);
    expect(rdma.sets()).toEqual(['mlx5_0/1 auto type,pid on optional-counters on']);
    await cycleUntil(2);
    rdma.busy([]);
    await cycleUntil(3);
    expect(rdma.sets()).toEqual([
      'mlx5_0/1 auto type,pid on optional-counters on',
      'mlx5_2/1 auto type,pid on optional-counters on',
    ]);
    expect(lines.filter((l) => /bound/.test(l.msg))).toHaveLength(1);
    // Nothing left to turn on and no new link: the mode is not read again.
    const modeReads = rdma.calls().filter((l) => l === '-j statistic qp mode').length;
    await cycleUntil(4);
    expect(rdma.calls().filter((l) => l === '-j statistic qp mode').length).toBe(modeReads);
    await runner.shutdown();
    expect(rdma.sets().slice(2).sort()).toEqual(['mlx5_0/1 auto off', 'mlx5_2/1 auto off']);
  });

  it('a stop during turn-on starts no further link and restores exactly the ones it changed (5 and the one cut short, not 8)', async () => {
    const base = demoTree({ layout: 'v2', nonJobHolder: false });
    const extra = [4, 5, 6, 7].map((i) => ({ ...(base.hcas[0] as HcaSpec), name: `mlx5_${i}`, uverbs: i }));
    const roots = writeTree(tmpDir(), { ...base, hcas: [...base.hcas, ...extra] });
    const rdma = new RecordingRdma(tmpDir('fake-rdma-'));
    const links = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => `mlx5_${i}/1`);
    rdma.modes(links.map((l) => ({ ifname: l.split('/')[0] as string, port: 1, mode: 'qp auto off' })));
    rdma.hang(['mlx5_5/1']);
    const { logger, lines } = capturingLogger();
    const agent = await startTestNodeAgent(roots, {
      logger,
      qpCounters: { path: rdma.path, mode: 'manage', timeoutMs: 60_000 },
    });
    await waitFor('the sixth turn-on under way', () => rdma.calls().some((l) => l.includes('mlx5_5/1 auto type,pid')));
    await agent.stop();
    const on = links.slice(0, 5).map((l) => `${l} auto type,pid on optional-counters on`);
    expect(rdma.sets().slice(0, 5)).toEqual(on);
    expect(rdma.sets().slice(5).sort()).toEqual([...links.slice(0, 6)].sort().map((l) => `${l} auto off`));
    expect(rdma.calls().filter((l) => /mlx5_[67]\/1/.test(l))).toEqual([]);
    const said = (re: RegExp) =>
      lines
        .filter((l) => re.test(l.msg))
        .map((l) => l.link as string)
        .sort();
    expect(said(/turned off again \(this agent turned them on\)/)).toEqual(links.slice(0, 5));
    expect(said(/cut their turn-on short/)).toEqual(['mlx5_5/1']);
  });

  it('an exit that cannot wait names at ERROR every link still on, with a command that turns it off', async () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false }));
    const rdma = new RecordingRdma(tmpDir('fake-rdma-'));
    const links = ['mlx5_0/1', 'mlx5_1/1', 'mlx5_2/1', 'mlx5_3/1'];
    rdma.modes(links.map((l) => ({ ifname: l.split('/')[0] as string, port: 1, mode: 'qp auto off' })));
    rdma.hangOff(['mlx5_1/1', 'mlx5_3/1']);
    const { logger, lines } = capturingLogger();
    const runner = new NodeRunner(
      nodeAgentOptions(roots, { logger, qpCounters: { path: rdma.path, mode: 'manage', timeoutMs: 5000 } }),
    );
    const count = (re: RegExp): number => lines.filter((l) => re.test(l.msg)).length;
    await runner.cycle();
    await waitFor('four links turned on', () => count(/turned on \(auto type,pid\)/) === 4 || undefined);
    // The stop's restore: two links are set back, two hang (until the restore's bound kills them).
    const shutdown = runner.shutdown();
    await waitFor('two links turned off again', () => count(/turned off again/) === 2 || undefined);
    runner.exitingNow();
    const errors = lines.filter((l) => l.level === 'error');
    expect(errors, JSON.stringify(lines)).toHaveLength(1);
    const left = ['mlx5_1/1', 'mlx5_3/1'];
    expect(errors[0]?.links).toEqual(left);
    expect(errors[0]?.commands).toEqual(left.map((l) => `${rdma.path} statistic qp set link ${l} auto off`));
    await shutdown;
    // The commands are exact: run as given, they turn those links off.
    rdma.hangOff([]);
    for (const command of errors[0]?.commands as string[]) execFileSync('/bin/sh', ['-c', command]);
    const modes = JSON.parse(fs.readFileSync(`${rdma.dir}/mode.json`, 'utf8')) as Array<{ mode: string }>;
    expect(modes.map((m) => m.mode)).toEqual(links.map(() => 'qp auto off'));
  });

  it('falls back to no optional counters where the tool does not take them', async () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false }));
    const rdma = new RecordingRdma(tmpDir('fake-rdma-'));
    rdma.modes([{ ifname: 'mlx5_0', port: 1, mode: 'qp auto off' }]);
    (await import('node:fs')).writeFileSync(`${rdma.dir}/no-optional`, '');
    const runner = new NodeRunner(
      nodeAgentOptions(roots, { qpCounters: { path: rdma.path, mode: 'manage', timeoutMs: 5000 } }),
    );
    await runner.cycle();
    await waitFor('the link turned on', () => rdma.sets().length > 0);
    await runner.shutdown();
    expect(rdma.sets()).toEqual(['mlx5_0/1 auto type,pid on', 'mlx5_0/1 auto off']);
  });
});

describe('rdma runs that fail', () => {
  it('a hung rdma is killed at the timeout, counted, and leaves no reading', async () => {
    const dir = tmpDir('hung-rdma-');
    const hung = `${dir}/rdma`;
    // Ten minutes: only the timeout ends it within the wait below (no duration is asserted).
    (await import('node:fs')).writeFileSync(hung, '#!/bin/sh\nexec sleep 600\n', { mode: 0o755 });
    let errors = 0;
    const source = new QpSource({
      path: hung,
      mode: 'observe',
      timeoutMs: 300,
      logger: silentLogger(),
      onError: () => errors++,
    });
    source.want([]);
    await waitFor('the hung run killed and counted', () => errors > 0);
    expect(errors).toBe(1);
    expect(source.latest()).toBeUndefined();
    source.stop();
  });

  it('manage without CAP_NET_ADMIN: logged once, not retried, nothing to restore', async () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false }));
    const rdma = new RecordingRdma(tmpDir('fake-rdma-'));
    rdma.modes([{ ifname: 'mlx5_0', port: 1, mode: 'qp auto off' }]);
    (await import('node:fs')).writeFileSync(`${rdma.dir}/denied`, '');
    const { logger, lines } = capturingLogger();
    const runner = new NodeRunner(
      nodeAgentOptions(roots, { logger, qpCounters: { path: rdma.path, mode: 'manage', timeoutMs: 5000 } }),
    );
    const reads = () => rdma.calls().filter((l) => l === '-j resource show qp').length;
    await waitFor('three readings', async () => {
      if (reads() < 3) await runner.cycle();
      return reads() >= 3;
    });
    await runner.shutdown();
    expect(rdma.calls().filter((l) => l.startsWith('statistic qp set'))).toEqual([
      'statistic qp set link mlx5_0/1 auto type,pid on optional-counters on',
    ]);
    expect(rdma.calls().filter((l) => l === '-j statistic qp mode')).toHaveLength(1);
    expect(lines.filter((l) => /CAP_NET_ADMIN/.test(l.msg))).toHaveLength(1);
    expect(rdma.sets()).toEqual([]);
  });
});
