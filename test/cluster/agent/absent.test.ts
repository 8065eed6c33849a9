/**
 * Endpoints slurmrestd does not serve on the negotiated version (no slurmdbd, no plugin): the
 * whole agent against the fake slurmrestd, counting the requests it receives per path.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterRunner } from '../../../src/cluster/agent.js';
import type { FakeSlurmrestd } from '../../../src/demo/fake-slurmrestd.js';
import { FAKE_LICENSE_TOTAL } from '../../../src/demo/slurm-render.js';
import { clusterAgentOptions, fakeSlurm, type TestClusterOptions } from '../../support/agents.js';
import { parseExposition, select, sumOf, valueOf } from '../../support/exposition.js';

const TOKEN = 'test-token';
const WAIT_MS = 600_000;
const LICENSES = '/slurm/v0.0.44/licenses/';
let server: FakeSlurmrestd | undefined;
let runner: ClusterRunner | undefined;

afterEach(async () => {
  await runner?.shutdown();
  await server?.close();
  runner = server = undefined;
});

/** An agent on the fake (v0.0.44) whose client's clock the test moves. */
async function start(o: TestClusterOptions, missing?: readonly string[]) {
  const clock = { now: 1_000_000 };
  const slurm = await fakeSlurm(['v0.0.44'], TOKEN, undefined, missing);
  server = slurm.server;
  runner = new ClusterRunner(
    clusterAgentOptions(slurm, TOKEN, { ...o, client: { now: () => clock.now, absentRetryMs: WAIT_MS } }),
  );
  return { clock, server, runner };
}

const requests = (s: FakeSlurmrestd, path: string): number => s.requests.get(path) ?? 0;

async function absentErrors(r: ClusterRunner, collector: string): Promise<{ absent: number; all: number }> {
  const self = parseExposition((await r.self.exposition()).text);
  return {
    absent: valueOf(self, 'slurm_exporter_collector_errors_total', { collector, kind: 'absent' }) ?? NaN,
    all: sumOf(self, 'slurm_exporter_collector_errors_total', { collector }),
  };
}

const familySize = (r: ClusterRunner, name: string): number =>
  select(parseExposition(r.pipeline.exposition.text), name).length;

describe('an endpoint slurmrestd does not serve', () => {
  it('slurmdbd without /qos: no renegotiation per cycle, counted once, the limit families absent', async () => {
    const { server, runner } = await start({ accountingLimits: true });
    await runner.collect();
    // At most one renegotiation, in the first cycle (when /qos answers before anything else did).
    const openapi = requests(server, '/openapi/v3');
    const qos = requests(server, '/slurmdb/v0.0.44/qos/');
    expect(openapi).toBeLessThanOrEqual(2);
    expect(qos).toBeGreaterThanOrEqual(1);
    expect(qos).toBeLessThanOrEqual(2);
    for (let i = 0; i < 4; i++) {
      const tick = await runner.collect();
      expect(tick.absent).toEqual(['limits']);
      expect(tick.failed).toEqual([]);
    }
    expect(requests(server, '/openapi/v3')).toBe(openapi);
    expect(requests(server, '/slurmdb/v0.0.44/qos/')).toBe(qos);
    expect(requests(server, '/slurm/v0.0.44/nodes/')).toBe(5);
    expect(await absentErrors(runner, 'limits')).toEqual({ absent: 1, all: 1 });
    expect(familySize(runner, 'slurm_qos_limit')).toBe(0);
    expect(familySize(runner, 'slurm_association_limit')).toBe(0);
    expect(familySize(runner, 'slurm_node_info')).toBe(12);
  });

  it('is asked again after the wait, and its families come back when it appears', async () => {
    const { clock, server, runner } = await start({ optional: ['licenses'] }, ['/slurm/v0.0.44/licenses']);
    expect((await runner.collect()).absent).toEqual(['licenses']);
    expect(familySize(runner, 'slurm_license_total')).toBe(0);
    server.setMissing([]);
    await runner.collect();
    expect(requests(server, LICENSES)).toBe(1);
    expect(familySize(runner, 'slurm_license_total')).toBe(0);
    clock.now += WAIT_MS;
    const tick = await runner.collect();
    expect(tick.absent).toEqual([]);
    expect(requests(server, LICENSES)).toBe(2);
    const total = select(parseExposition(runner.pipeline.exposition.text), 'slurm_license_total');
    expect(total.map((s) => s.value)).toEqual([FAKE_LICENSE_TOTAL]);
    expect(requests(server, '/openapi/v3')).toBe(1);
    expect(await absentErrors(runner, 'licenses')).toEqual({ absent: 1, all: 1 });
  });

  it('that disappears drops its families rather than freezing them, and is counted once', async () => {
    const { server, runner } = await start({ optional: ['licenses'] });
    await runner.collect();
    expect(familySize(runner, 'slurm_license_total')).toBe(1);
    server.setMissing([LICENSES]);
    expect((await runner.collect()).absent).toEqual(['licenses']);
    expect(familySize(runner, 'slurm_license_total')).toBe(0);
    expect(familySize(runner, 'slurm_node_info')).toBe(12);
    // Served before on this version: one renegotiation to rule out a restarted slurmrestd, then remembered.
    expect(requests(server, '/openapi/v3')).toBe(2);
    const asked = requests(server, LICENSES);
    await runner.collect();
    await runner.collect();
    expect(requests(server, LICENSES)).toBe(asked);
    expect(requests(server, '/openapi/v3')).toBe(2);
    expect(await absentErrors(runner, 'licenses')).toEqual({ absent: 1, all: 1 });
  });
});
