/**
 * An idle port that carries traffic (the kernel's own RDMA users hold no fd) says where that
 * traffic comes from: the landing page when its bytes moved in the latest step, explain when the
 * port has counted bytes; an idle port without traffic, and a held one, say nothing of it.
 */
import { describe, expect, it } from 'vitest';
import { writeCounters, writeTree } from '../../src/demo/nodetree.js';
import { demoTree } from '../../src/demo/scenarios.js';
import { NodeCollector } from '../../src/node/collect.js';
import { attributionRows } from '../../src/node/explain.js';
import { CounterHistory, motionReadings } from '../../src/node/history.js';
import { renderLanding } from '../../src/node/landing.js';
import { explainCli } from '../support/node-tree.js';
import { tmpDir } from '../support/tmp.js';

const KERNEL = 'comes from the kernel (IPoIB, storage over RDMA';

/** The why cell of a port's row on the landing page. */
function whyOf(html: string, device: string): string {
  const row = new RegExp(`<tr class="[^"]*" data-device="${device}"[^\\n]*`).exec(html)?.[0] ?? '';
  return /<td>([^<]*)<\/td><td><code>|<td>([^<]*)<\/td><td><\/td><\/tr>/.exec(row)?.slice(1).join('') ?? row;
}

describe('an idle port with traffic', () => {
  it('on the landing page: its rate and where it comes from, only while its bytes move', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
    const collector = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 });
    const history = new CounterHistory();
    const render = (atMs: number): string => {
      const c = collector.cycle(atMs);
      history.record(atMs, motionReadings(c.snapshot, c.attribution));
      const meta = { host: 'n1', version: '1', atMs, refreshSeconds: 15, gaps: [], history };
      return renderLanding(attributionRows(c), meta);
    };
    writeCounters(roots.sysfs, 'mlx5_3', 1, { port_xmit_data: 1_000n, port_rcv_data: 0n }, 'counters');
    writeCounters(roots.sysfs, 'mlx5_0', 1, { port_xmit_data: 1_000n }, 'counters');
    expect(whyOf(render(1_000), 'mlx5_3')).not.toContain(KERNEL);
    // 1,000 data words (4 bytes each) more in one second on the idle port and on a sole one.
    writeCounters(roots.sysfs, 'mlx5_3', 1, { port_xmit_data: 2_000n }, 'counters');
    writeCounters(roots.sysfs, 'mlx5_0', 1, { port_xmit_data: 2_000n }, 'counters');
    const moving = render(2_000);
    expect(moving).toMatch(/data-device="mlx5_3" data-port="1" data-status="idle"/);
    expect(whyOf(moving, 'mlx5_3')).toContain(`it moves 4 kB/s with no holder: that traffic ${KERNEL}`);
    expect(whyOf(moving, 'mlx5_0')).not.toContain(KERNEL);
    expect(whyOf(render(3_000), 'mlx5_3')).not.toContain(KERNEL);
  });

  it('in explain: where what it carries comes from, when it has counted bytes', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
    writeCounters(roots.sysfs, 'mlx5_3', 1, { port_xmit_data: 0n, port_rcv_data: 0n }, 'counters');
    const why = (): string => {
      const run = explainCli(roots, '--json');
      expect(run.status, run.stderr).toBe(0);
      const out = JSON.parse(run.stdout) as { ports: { device: string; status: string; why: string }[] };
      const port = out.ports.find((p) => p.device === 'mlx5_3');
      expect(port?.status).toBe('idle');
      return port?.why ?? '';
    };
    expect(why()).not.toContain(KERNEL);
    writeCounters(roots.sysfs, 'mlx5_3', 1, { port_xmit_data: 250_000n, port_rcv_data: 500_000n }, 'counters');
    expect(why()).toContain(
      `it has counted 1 MB sent and 2 MB received: what it carries while no process holds it ${KERNEL}`,
    );
  });
});
