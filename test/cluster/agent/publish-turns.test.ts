/**
 * A publish gives the event loop whole turns between its steps (src/cluster/agent.ts): at 100,000
 * jobs each step takes hundreds of milliseconds, and a scrape or a timer waiting behind all of them
 * waited for the sum. Seen here by order, not by time: a timer made due right after the first step
 * must run before the families reach the pipeline.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterRunner } from '../../../src/cluster/agent.js';
import type { FakeSlurmrestd } from '../../../src/demo/fake-slurmrestd.js';
import { clusterAgentOptions, fakeSlurm } from '../../support/agents.js';

let server: FakeSlurmrestd | undefined;
let runner: ClusterRunner | undefined;

afterEach(async () => {
  await runner?.shutdown();
  await server?.close();
  server = runner = undefined;
});

describe('a publish of the cluster agent', () => {
  it('lets a due timer run between the state and the families reaching the pipeline', async () => {
    const slurm = await fakeSlurm(['v0.0.44'], 'test-token');
    server = slurm.server;
    const r = new ClusterRunner(clusterAgentOptions(slurm, 'test-token'));
    runner = r;
    const order: string[] = [];
    const record = r.pipeline.record.bind(r.pipeline);
    // The state's transitions are recorded right after the state is advanced, the first step.
    r.pipeline.record = (events) => {
      record(events);
      if (order.length > 0) return;
      order.push('state');
      setTimeout(() => order.push('timer'), 0);
      // Until the timer is due (1 ms), so that the next turn of the loop runs it, however fast.
      const t0 = performance.now();
      while (performance.now() - t0 < 2);
    };
    const publish = r.pipeline.publish.bind(r.pipeline);
    r.pipeline.publish = (...args) => {
      order.push('families');
      return publish(...args);
    };
    await r.collect();
    expect(order.slice(0, 3)).toEqual(['state', 'timer', 'families']);
  });
});
