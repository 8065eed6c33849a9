/**
 * A publish gives the event loop whole turns between its steps (src/cluster/agent.ts): at 100,000
 * jobs each step takes hundreds of milliseconds, and a scrape or a timer waiting behind all of them
 * waited for the sum. Seen here by order, not by time: a timer made due right after the first step
 * must run before the families reach the pipeline.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterRunner } from '../../../src/cluster/agent.js';
import { staticToken } from '../../../src/cluster/api/http/auth.js';
import { SlurmClient } from '../../../src/cluster/api/client.js';
import { silentLogger } from '../../support/log.js';
import { FaultServer } from '../api/fault-server.js';

let server: FaultServer | undefined;
let runner: ClusterRunner | undefined;

afterEach(async () => {
  await runner?.shutdown();
  await server?.close();
  server = runner = undefined;
});

describe('a publish of the cluster agent', () => {
  it('lets a due timer run between the state and the families reaching the pipeline', async () => {
    server = await FaultServer.start({ versions: ['v0.0.44'] });
    const api = new SlurmClient({
      server: server.url,
      tokenSource: staticToken({ token: 't', userName: 'root' }),
      requestTimeoutMs: 60_000,
      logger: silentLogger(),
    });
    const r = new ClusterRunner({
      source: { api, jobSource: 'controller', accountingLookbackMs: 3_600_000 },
      collectionIntervalMs: 60_000,
      maxInflight: 1,
      metrics: { host: '127.0.0.1', port: 0 },
      monitoring: { host: '127.0.0.1', port: 0 },
      resource: { serviceName: 'slurm-otel-cluster', serviceVersion: 'test', hostName: 'test' },
      logger: silentLogger(),
      close: () => api.close(),
    });
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
