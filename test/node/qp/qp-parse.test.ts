/**
 * Hostile rdma readings: the scanner agrees with JSON.parse on what is JSON, and the readers keep
 * within their caps (entries, counter names, devices, size), count what they drop, and label
 * failures by kind; the agent exports those counts.
 */
import fs from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { END, JsonArrayScanner, JsonSyntaxError } from '../../support/json-scanner.js';
import {
  CounterNames,
  MAX_COUNTERS,
  MAX_OTHER_NAMES,
  MAX_READING_BYTES,
  Q_COUNTERS,
} from '../../../src/node/qp/qp-parse.js';
import { counterEntries, drain, parseQpCounters, resourceEntries } from '../../support/qp-text.js';
import { QpSource } from '../../../src/node/qp/qp-source.js';
import type { FailureKind } from '../../../src/node/read/result.js';
import { RecordingRdma } from '../../support/recording-rdma.js';
import { demoTree } from '../../../src/demo/scenarios.js';
import { writeTree } from '../../../src/demo/nodetree.js';
import { startTestNodeAgent } from '../../support/agents.js';
import { capturingLogger, silentLogger } from '../../support/log.js';
import { tmpDir } from '../../support/tmp.js';
import { waitFor } from '../../support/tools.js';

/** Every element of the array through the scanner; throws JsonSyntaxError where JSON.parse would. */
function scanAll(text: string): number {
  const s = new JsonArrayScanner(text, { maxFields: 1000, maxArrayItems: 1000 });
  let n = 0;
  while (s.next(() => n % 2 === 0) !== END) n++;
  return n;
}

const accepts = (f: () => unknown): boolean => {
  try {
    f();
    return true;
  } catch (err) {
    if (err instanceof JsonSyntaxError || err instanceof SyntaxError) return false;
    throw err;
  }
};

describe('the JSON array scanner', () => {
  const arrays = fc.array(fc.jsonValue({ maxDepth: 6 }), { maxLength: 8 });

  it('takes every JSON array JSON.stringify writes, with as many elements (property)', () => {
    fc.assert(
      fc.property(arrays, fc.boolean(), (a, pretty) => {
        const text = pretty ? JSON.stringify(a, null, 2) : JSON.stringify(a);
        expect(scanAll(text)).toBe(a.length);
      }),
    );
  });

  it('refuses exactly what JSON.parse refuses, among cut and altered arrays (property)', () => {
    const edits = fc.record({
      cut: fc.nat(),
      at: fc.nat(),
      ch: fc.constantFrom('"', ',', ']', '}', '\\', '\u0001', 'x', '-'),
    });
    fc.assert(
      fc.property(arrays, edits, (a, e) => {
        const full = JSON.stringify(a);
        const cut = full.slice(0, e.cut % (full.length + 1));
        const at = e.at % (cut.length + 1);
        const text = cut.slice(0, at) + e.ch + cut.slice(at);
        const parsed = accepts(() => JSON.parse(text) as unknown);
        const isArray = parsed && Array.isArray(JSON.parse(text));
        expect(accepts(() => scanAll(text))).toBe(isArray);
      }),
      { numRuns: 500 },
    );
  });

  it('calls a 150 KB unterminated string followed by digits malformed (one pass, no backtracking)', () => {
    const r = parseQpCounters(`[{"comm":"${'\\"'.repeat(75_000)}12345678901234567890`);
    expect(r).toMatchObject({ ok: false, kind: 'malformed' });
    expect(!r.ok && r.detail).toMatch(/unterminated string/);
  });
});

const entry = (i: number, extra = ''): string =>
  `{"ifname":"mlx5_1","port":1,"cntn":${i},"pid":42010,"rx_write_requests":${i}${extra},"lqpn":[${i}]}`;

describe('caps on a reading', () => {
  it('keeps MAX_COUNTERS entries and counts the others dropped', () => {
    const text = `[${Array.from({ length: MAX_COUNTERS + 500 }, (_, i) => entry(i)).join(',')}]`;
    const r = drain(counterEntries(text, { names: new CounterNames() }));
    expect(r.ok && r.value.items.length).toBe(MAX_COUNTERS);
    expect(r.ok && r.value.dropped.entries).toBe(500);
  });

  it('keeps the Q counters and the first few other names only, for the life of the names', () => {
    const names = new CounterNames();
    const others = (from: number, n: number): string =>
      Array.from({ length: n }, (_, k) => `,"odd_${from + k}":1`).join('');
    const first = drain(counterEntries(`[${entry(1, others(0, 60))}]`, { names }));
    expect(first.ok && [...(first.value.items[0]?.values.keys() ?? [])].length).toBe(1 + MAX_OTHER_NAMES);
    expect(first.ok && first.value.dropped.counters).toBe(60 - MAX_OTHER_NAMES);
    const second = drain(counterEntries(`[${entry(1, others(1000, 5))}]`, { names }));
    expect(second.ok && [...(second.value.items[0]?.values.keys() ?? [])]).toEqual(['rx_write_requests']);
    expect(second.ok && second.value.dropped.counters).toBe(5);
    const known = [...Q_COUNTERS].map((n) => `,"${n}":7`).join('');
    const all = drain(counterEntries(`[${entry(2, known.replace(',"rx_write_requests":7', ''))}]`, { names }));
    expect(all.ok && all.value.items[0]?.values.size).toBe(Q_COUNTERS.size);
  });

  it("keeps only the node's HCA links, for counters and QPs alike", () => {
    const links = new Set(['mlx5_1/1']);
    const text = `[${entry(1)},${entry(2).replace('mlx5_1', 'dev9')},${entry(3).replace('"port":1', '"port":2')}]`;
    const r = drain(counterEntries(text, { names: new CounterNames(), links }));
    expect(r.ok && r.value.items.map((c) => c.cntn)).toEqual([1]);
    expect(r.ok && r.value.dropped.devices).toBe(2);
    const qps = drain(resourceEntries(text, { names: new CounterNames(), links }));
    expect(qps.ok && qps.value.items).toEqual([{ device: 'mlx5_1', port: '1', pid: 42010, qps: 1 }]);
  });

  it('counts the QPs of a resource listing per link and PID', () => {
    const qp = (pid: number, lqpn: number): string =>
      `{"ifindex":2,"ifname":"mlx5_1","port":1,"lqpn":${lqpn},"type":"RC","state":"RTS","pid":${pid},"comm":"x"}`;
    const text = `[${[qp(1, 1), qp(1, 2), qp(2, 3), qp(1, 4)].join(',')}]`;
    const r = drain(resourceEntries(text, { names: new CounterNames() }));
    expect(r.ok && r.value.items).toEqual([
      { device: 'mlx5_1', port: '1', pid: 1, qps: 3 },
      { device: 'mlx5_1', port: '1', pid: 2, qps: 1 },
    ]);
  });

  it('leaves out a counter value above 2^64-1 (or no whole number), counting it; the rest of the entry stays', () => {
    const max = '18446744073709551615';
    const bad = [
      `,"out_of_sequence":18446744073709551616`,
      `,"duplicate_request":"99999999999999999999"`,
      `,"rnr_nak_retry_err":123456789012345678901234567890`,
      `,"packet_seq_err":-1`,
      `,"local_ack_timeout_err":1.5`,
      `,"resp_cqe_error":1e3`,
    ].join('');
    const text = `[${entry(1, `,"rdma_tx_bytes":${max}${bad},"rdma_rx_bytes":"${max}","comm":"x"`)}]`;
    const r = drain(counterEntries(text, { names: new CounterNames() }));
    if (!r.ok) throw new Error(r.detail);
    const values = r.value.items[0]?.values;
    expect(values && Object.fromEntries(values)).toEqual({
      rx_write_requests: 1n,
      rdma_tx_bytes: 18446744073709551615n,
      rdma_rx_bytes: 18446744073709551615n,
    });
    expect(r.value.dropped.values).toBe(6);
    expect(r.value.malformed).toBe('out_of_sequence=18446744073709551616');
    const fine = drain(counterEntries(`[${entry(2)}]`, { names: new CounterNames() }));
    expect(fine.ok && fine.value).toMatchObject({ dropped: { values: 0 } });
    expect(fine.ok && 'malformed' in fine.value).toBe(false);
  });

  it('refuses a reading over MAX_READING_BYTES as too_large', () => {
    const r = drain(counterEntries(`[${' '.repeat(MAX_READING_BYTES)}]`, { names: new CounterNames() }));
    expect(r).toMatchObject({ ok: false, kind: 'too_large' });
  });
});

/** A stand-in rdma that prints what `script` (sh) prints. */
function shellRdma(script: string): string {
  const file = `${tmpDir('rdma-sh-')}/rdma`;
  fs.writeFileSync(file, `#!/bin/sh\n${script}\n`, { mode: 0o755 });
  return file;
}

describe('rdma failures by kind', () => {
  const kindOf = async (path: string): Promise<FailureKind[]> => {
    const kinds: FailureKind[] = [];
    const source = new QpSource({
      path,
      mode: 'observe',
      timeoutMs: 30_000,
      logger: silentLogger(),
      onError: (k) => kinds.push(k),
    });
    try {
      source.want([]);
      await waitFor('an rdma failure', () => (kinds.length > 0 ? true : undefined));
      return kinds;
    } finally {
      source.stop();
    }
  };

  it('invalid JSON is malformed, an oversized reading too_large, a failed run io', async () => {
    expect(await kindOf(shellRdma(`printf '[{"ifname":'`))).toEqual(['malformed']);
    const big = MAX_READING_BYTES + 4096;
    expect(await kindOf(shellRdma(`head -c ${big} /dev/zero | tr '\\000' ' '`))).toEqual(['too_large']);
    expect(await kindOf(shellRdma('echo nope >&2; exit 3'))).toEqual(['io']);
  });

  it('the agent counts them by kind and what readings drop by reason', async () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false }));
    const rdma = new RecordingRdma(tmpDir('fake-rdma-'));
    fs.writeFileSync(`${rdma.dir}/stat.json`, `[${entry(1)},${entry(2).replace('mlx5_1', 'dev9')}]`);
    fs.writeFileSync(`${rdma.dir}/resource.json`, '[{"ifname":');
    const agent = await startTestNodeAgent(roots, {
      qpCounters: { path: rdma.path, mode: 'observe', timeoutMs: 30_000 },
    });
    try {
      const self = async (): Promise<string> => (await fetch(`${agent.monitoringUrl}/metrics`)).text();
      await waitFor('the rdma failure and the dropped entry counted', async () => {
        await agent.cycleNow();
        const text = await self();
        const counted =
          text.includes('ib_slurm_exporter_cycle_errors_total{source="rdma",kind="malformed"}') &&
          text.includes('ib_slurm_exporter_qp_reading_dropped_total{reason="devices"}');
        return counted ? true : undefined;
      });
      expect(await self()).not.toMatch(/cycle_errors_total\{source="rdma",kind="io"\}/);
    } finally {
      await agent.stop();
    }
  });

  it('the agent counts and logs a counter value above 2^64-1, once, and never exports it', async () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false }));
    const rdma = new RecordingRdma(tmpDir('fake-rdma-'));
    fs.writeFileSync(`${rdma.dir}/stat.json`, `[${entry(1, ',"out_of_sequence":18446744073709551616')}]`);
    const { logger, lines } = capturingLogger();
    const agent = await startTestNodeAgent(roots, {
      logger,
      qpCounters: { path: rdma.path, mode: 'observe', timeoutMs: 30_000 },
    });
    try {
      const self = async (): Promise<string> => (await fetch(`${agent.monitoringUrl}/metrics`)).text();
      await waitFor('the malformed value counted', async () => {
        await agent.cycleNow();
        return /ib_slurm_exporter_qp_reading_dropped_total\{reason="values"\} [1-9]/.test(await self()) || undefined;
      });
      await agent.cycleNow();
      const logged = lines.filter((l) => /no 64-bit counter holds/.test(l.msg));
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatchObject({ level: 'warn', count: 1, example: 'out_of_sequence=18446744073709551616' });
      const exposition = await (await fetch(agent.metricsUrl)).text();
      expect(exposition).not.toContain('18446744073709551616');
    } finally {
      await agent.stop();
    }
  });
});
