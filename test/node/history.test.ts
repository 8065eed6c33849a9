import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeCounters, writeTree } from '../../src/demo/nodetree.js';
import { demoTree } from '../../src/demo/scenarios.js';
import { NodeCollector } from '../../src/node/collect.js';
import { attributionRows } from '../../src/node/explain.js';
import {
  CounterHistory,
  HISTORY_LENGTH,
  jobKey,
  motionReadings,
  portKey,
  rateSteps,
  RX_BYTES,
  TX_BYTES,
  type Reading,
} from '../../src/node/history.js';
import { renderLanding } from '../../src/node/landing.js';
import { tmpDir } from '../support/tmp.js';

const at = (atMs: number, values: Record<string, bigint>): Reading => ({
  atMs,
  values: new Map(Object.entries(values)),
});
const one = (key: string, values: Record<string, bigint>) => new Map([[key, new Map(Object.entries(values))]]);

describe('rates between consecutive readings', () => {
  it('are the increase over the elapsed seconds', () => {
    const steps = rateSteps(
      [at(0, { c: 100n }), at(2_000, { c: 300n }), at(2_500, { c: 300n }), at(4_500, { c: 1_300n })],
      'c',
    );
    expect(steps).toEqual([
      { atMs: 2_000, perSecond: 100 },
      { atMs: 2_500, perSecond: 0 },
      { atMs: 4_500, perSecond: 500 },
    ]);
  });

  it('have no value for a step where the counter went down (a reset), and resume after it', () => {
    const steps = rateSteps([at(0, { c: 5_000n }), at(1_000, { c: 10n }), at(2_000, { c: 60n })], 'c');
    expect(steps.map((s) => s.perSecond)).toEqual([undefined, 50]);
  });

  it('have no value where either reading lacks the counter or no time passed', () => {
    const steps = rateSteps(
      [at(0, { c: 1n }), at(1_000, {}), at(2_000, { c: 5n }), at(2_000, { c: 9n }), at(3_000, { c: 10n })],
      'c',
    );
    expect(steps.map((s) => s.perSecond)).toEqual([undefined, undefined, undefined, 1]);
  });

  it('keep 64-bit counters exact enough beyond 2^53', () => {
    const big = 1n << 60n;
    expect(rateSteps([at(0, { c: big }), at(1_000, { c: big + 4_000_000n })], 'c')[0]?.perSecond).toBe(4_000_000);
  });
});

describe('counter history', () => {
  it(`keeps the last ${HISTORY_LENGTH} readings per key by default`, () => {
    const h = new CounterHistory();
    for (let i = 0; i < HISTORY_LENGTH + 12; i++) h.record(i * 1_000, one('p', { c: BigInt(i) }));
    const kept = h.readings('p');
    expect(kept.length).toBe(HISTORY_LENGTH);
    expect(kept[0]?.atMs).toBe(12_000);
    expect(kept.at(-1)?.atMs).toBe((HISTORY_LENGTH + 11) * 1_000);
    expect(h.rates('p', 'c').length).toBe(HISTORY_LENGTH - 1);
  });

  it('drops a key absent from a reading at once, and starts it afresh if it comes back', () => {
    const h = new CounterHistory(5);
    h.record(
      0,
      new Map([
        ['a', new Map([['c', 1n]])],
        ['b', new Map([['c', 1n]])],
      ]),
    );
    h.record(1_000, one('a', { c: 2n }));
    expect(h.keys()).toEqual(['a']);
    expect(h.readings('b')).toEqual([]);
    h.record(
      2_000,
      new Map([
        ['a', new Map([['c', 3n]])],
        ['b', new Map([['c', 9n]])],
      ]),
    );
    expect(h.readings('b').length).toBe(1);
    expect(h.rates('b', 'c')).toEqual([]);
  });

  it('refuses a length that cannot hold a rate', () => {
    expect(() => new CounterHistory(1)).toThrow(/at least 2/);
    expect(() => new CounterHistory(2.5)).toThrow(/integer/);
  });
});

describe('what the history keeps from a cycle', () => {
  function node() {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: true }));
    return { roots, collector: new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }) };
  }

  it('bytes (data words × 4) and the error counters per port, bytes per sole job, from the real files', () => {
    const { roots, collector } = node();
    const h = new CounterHistory();
    writeCounters(
      roots.sysfs,
      'mlx5_0',
      1,
      { port_xmit_data: 1_000, port_rcv_data: 2_000, symbol_error: 3 },
      'counters',
    );
    writeCounters(roots.sysfs, 'mlx5_0', 1, { rnr_nak_retry_err: 7 }, 'hw_counters');
    let c = collector.cycle(10_000);
    h.record(c.snapshot.atMs, motionReadings(c.snapshot, c.attribution));
    writeCounters(
      roots.sysfs,
      'mlx5_0',
      1,
      { port_xmit_data: 6_000, port_rcv_data: 2_500, symbol_error: 1 },
      'counters',
    );
    c = collector.cycle(12_000);
    h.record(c.snapshot.atMs, motionReadings(c.snapshot, c.attribution));

    const port = h.readings(portKey('mlx5_0', '1')).at(-1)?.values;
    expect(port?.get(TX_BYTES)).toBe(24_000n);
    expect(port?.get(RX_BYTES)).toBe(10_000n);
    expect(port?.get('rnr_nak_retry_err')).toBe(7n);
    expect(port?.has('port_xmit_packets')).toBe(false);
    expect(h.rates(portKey('mlx5_0', '1'), TX_BYTES).map((s) => s.perSecond)).toEqual([10_000]);
    expect(h.rates(portKey('mlx5_0', '1'), RX_BYTES).map((s) => s.perSecond)).toEqual([1_000]);
    // symbol_error went from 3 to 1: a reset, so no rate for that step.
    expect(h.rates(portKey('mlx5_0', '1'), 'symbol_error').map((s) => s.perSecond)).toEqual([undefined]);
    // Job 918001 is the only holder of mlx5_0: its own bytes grow by the port's increase from 0.
    const job = h.readings(jobKey('918001', 'mlx5_0', '1'));
    expect(job.map((r) => r.values.get(TX_BYTES))).toEqual([0n, 20_000n]);
    expect(
      h
        .keys()
        .filter((k) => k.startsWith('job '))
        .sort(),
    ).toEqual([jobKey('918001', 'mlx5_0', '1'), jobKey('918004', 'mlx5_2', '1')]);
  });

  it('forgets a port that vanished from sysfs', () => {
    const { roots, collector } = node();
    const h = new CounterHistory();
    let c = collector.cycle(1_000);
    h.record(c.snapshot.atMs, motionReadings(c.snapshot, c.attribution));
    expect(h.readings(portKey('mlx5_2', '1')).length).toBe(1);
    fs.rmSync(path.join(roots.sysfs, 'class', 'infiniband', 'mlx5_2'), { recursive: true });
    c = collector.cycle(2_000);
    h.record(c.snapshot.atMs, motionReadings(c.snapshot, c.attribution));
    expect(h.readings(portKey('mlx5_2', '1'))).toEqual([]);
    expect(h.readings(portKey('mlx5_0', '1')).length).toBe(2);
  });
});

describe('the node landing page with history', () => {
  it('escapes hostile process names and job ids in every table', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: true }));
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1_000);
    const hostile = '<script>alert(1)</script>';
    const rows = attributionRows(c).map((r) =>
      r.attributedTo === undefined
        ? r
        : {
            ...r,
            attributedTo: hostile,
            jobs: r.jobs.map((j) => ({
              ...j,
              jobId: hostile,
              holders: j.holders.map((x) => ({ ...x, comm: hostile })),
            })),
          },
    );
    const h = new CounterHistory();
    const readings = new Map([...motionReadings(c.snapshot, c.attribution)].filter(([k]) => k.startsWith('port ')));
    for (const r of rows)
      if (r.attributedTo) readings.set(jobKey(r.attributedTo, r.device, r.port), new Map([[TX_BYTES, 4n]]));
    h.record(1_000, readings);
    const html = renderLanding(rows, {
      host: 'n1',
      version: '1',
      atMs: 1_000,
      refreshSeconds: 15,
      gaps: [],
      history: h,
    });
    expect(html).not.toContain('<script>');
    expect(html).toContain(
      `<tr data-sole-job="&#60;script&#62;alert(1)&#60;/script&#62;" data-motion="mlx5_0/1"><td>&#60;script&#62;alert(1)&#60;/script&#62;</td>`,
    );
    expect(html).toContain('<td class="num" data-total="tx_bytes">4 B</td>');
  });

  it('says so when no job has its own series, and leaves the section out without history', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: true }));
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1_000);
    const rows = attributionRows(c).map((r) => ({ ...r, attributedTo: undefined }));
    const meta = { host: 'n1', version: '1', atMs: 1_000, refreshSeconds: 15, gaps: [] };
    expect(renderLanding(rows, { ...meta, history: new CounterHistory() })).toContain('id="no-sole-jobs"');
    expect(renderLanding(rows, meta)).not.toContain('id="motion"');
  });
});

describe('saturated error counters', () => {
  it('have no rate once stuck at their maximum, and the page says so', () => {
    // symbol_error is a 16-bit PMA counter: it stops at 65535.
    const readings = [
      at(0, { symbol_error: 65_000n }),
      at(1_000, { symbol_error: 65_535n }),
      at(2_000, { symbol_error: 65_535n }),
    ];
    expect(rateSteps(readings, 'symbol_error').map((s) => s.perSecond)).toEqual([undefined, undefined]);
    const h = new CounterHistory();
    for (const r of readings) h.record(r.atMs, new Map([[portKey('mlx5_0', '1'), r.values]]));
    const row = {
      device: 'mlx5_0',
      port: '1',
      linkLayer: 'InfiniBand',
      rate: '',
      state: '',
      status: 'idle' as const,
      why: '',
      jobs: [],
      nonJob: [],
      counters: {},
    };
    const html = renderLanding([row], {
      host: 'n1',
      version: '1',
      atMs: 2_000,
      refreshSeconds: 15,
      gaps: [],
      history: h,
    });
    expect(html).toContain(
      '<div class="err moved" data-counter="symbol_error"><span class="num">symbol_error saturated</span>',
    );
  });
});
