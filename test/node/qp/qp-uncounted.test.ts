/**
 * A link whose processes hold QPs while the kernel counts none of them (Soft-RoCE rxe takes
 * `rdma statistic qp set … auto type,pid on` and then binds no QP to a counter; a link left in
 * `qp auto off` does the same): the per-job QP series are unavailable there. The agent exports no
 * counter series (never zeros), says through ib_slurm_job_qp_counted 0 beside ib_slurm_job_qps
 * that none of the job's QPs is counted, and logs why, once per link, from the link's mode.
 */
import { describe, expect, it } from 'vitest';
import { NodeCollector } from '../../../src/node/collect.js';
import type { Cycle } from '../../../src/node/join/cycle.js';
import { NODE_METRICS } from '../../../src/node/metrics.js';
import { QpSource } from '../../../src/node/qp/qp-source.js';
import { demoTree } from '../../../src/demo/scenarios.js';
import { writeTree } from '../../../src/demo/nodetree.js';
import { RecordingRdma } from '../../support/recording-rdma.js';
import type { Point } from '../../../src/telemetry/spec.js';
import { capturingLogger } from '../../support/log.js';
import { tmpDir } from '../../support/tmp.js';
import { waitFor } from '../../support/tools.js';

const points = (c: Cycle, name: string) => (c.families.find((f) => f.spec.name === name)?.points ?? []) as Point[];

/** The demo node (jobs 918002 and 918003 share mlx5_1), its rdma listing QPs of both and no counter. */
function uncountedNode(mode: string) {
  const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false }));
  const rdma = new RecordingRdma(tmpDir('fake-rdma-'));
  rdma.counters([]);
  rdma.resources([
    { ifname: 'mlx5_1', port: 1, pid: 42010, lqpn: 17 },
    { ifname: 'mlx5_1', port: 1, pid: 42010, lqpn: 18 },
    { ifname: 'mlx5_1', port: 1, pid: 43010, lqpn: 19 },
    { ifname: 'mlx5_1', port: 1, lqpn: 1 }, // the kernel's GSI QP: no pid
  ]);
  rdma.modes([
    { ifname: 'mlx5_0', port: 1, mode },
    { ifname: 'mlx5_1', port: 1, mode },
  ]);
  const { logger, lines } = capturingLogger();
  const source = new QpSource({ path: rdma.path, mode: 'observe', timeoutMs: 5000, logger });
  const collector = new NodeCollector({ roots, fdRescanIntervalMs: 60_000, qp: source });
  return { rdma, lines, source, collector };
}

/** Cycles until one used the n-th reading. */
async function cycleWithReading(collector: NodeCollector, source: QpSource, n: number): Promise<Cycle> {
  return waitFor(`reading ${n}`, () => {
    const c = collector.cycle();
    return (source.latest()?.seq ?? 0) >= n && c.qp?.seq === source.latest()?.seq ? c : undefined;
  });
}

describe('per-job QP counters unavailable on a link', () => {
  it('mode on but no counter (rxe): no counter series, counted 0 beside the QPs, and why, logged once', async () => {
    const { rdma, lines, source, collector } = uncountedNode('qp auto type,pid on optional-counters on');
    try {
      const c = await cycleWithReading(collector, source, 1);
      expect(points(c, NODE_METRICS.jobQpCounters.name)).toEqual([]);
      const of = (name: string, job: string) =>
        points(c, name).find((p) => p.attributes.job_id === job && p.attributes.device === 'mlx5_1')?.value;
      expect(of(NODE_METRICS.jobQps.name, '918002')).toBe(2);
      expect(of(NODE_METRICS.jobQps.name, '918003')).toBe(1);
      expect(of(NODE_METRICS.jobQpCounted.name, '918002')).toBe(0);
      expect(of(NODE_METRICS.jobQpCounted.name, '918003')).toBe(0);
      const said = () => lines.filter((l) => /per-job QP counters unavailable on mlx5_1\/1/.test(l.msg));
      await waitFor('the reason logged', () => said().length > 0);
      expect(said()[0]?.msg).toContain("although its mode is 'qp auto type,pid on optional-counters on'");
      expect(said()[0]?.msg).toContain('Soft-RoCE rxe');
      // mlx5_0 has no QP: nothing to say about it.
      expect(lines.filter((l) => /mlx5_0/.test(l.msg))).toEqual([]);
      await cycleWithReading(collector, source, 3);
      expect(said()).toHaveLength(1);
      expect(rdma.calls().filter((l) => l === '-j statistic qp mode')).toHaveLength(1);
    } finally {
      source.stop();
    }
  });

  it('mode left off: says how to turn it on', async () => {
    const { lines, source, collector } = uncountedNode('qp auto off');
    try {
      await cycleWithReading(collector, source, 1);
      const said = await waitFor('the reason logged', () =>
        lines.find((l) => /per-job QP counters unavailable on mlx5_1\/1/.test(l.msg)),
      );
      expect(said.msg).toContain("its mode is 'qp auto off'");
      expect(said.msg).toContain('--qp-counters manage');
    } finally {
      source.stop();
    }
  });

  it('a link that gets counters is not reported, and is reported again when it loses them', async () => {
    const { rdma, lines, source, collector } = uncountedNode('qp auto type,pid on');
    const said = () => lines.filter((l) => /unavailable on mlx5_1\/1/.test(l.msg));
    try {
      await cycleWithReading(collector, source, 1);
      await waitFor('the first report', () => said().length === 1);
      rdma.counters([
        { ifname: 'mlx5_1', port: 1, cntn: 4, pid: 42010, counters: { rx_write_requests: 5 }, lqpn: [17, 18] },
      ]);
      const counted = await waitFor('a reading with the counter', async () => {
        const c = await cycleWithReading(collector, source, (source.latest()?.seq ?? 0) + 1);
        return c.qp?.counted.size ? c : undefined;
      });
      const of = (job: string) =>
        points(counted, NODE_METRICS.jobQpCounted.name).find((p) => p.attributes.job_id === job)?.value;
      expect(of('918002')).toBe(2);
      expect(of('918003')).toBe(0); // its QP is on no counter
      expect(said()).toHaveLength(1);
      rdma.counters([]);
      await waitFor('the second report', async () => {
        await cycleWithReading(collector, source, (source.latest()?.seq ?? 0) + 1);
        return said().length === 2;
      });
    } finally {
      source.stop();
    }
  });
});
