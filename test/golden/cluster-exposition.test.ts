/**
 * The cluster agent's whole exposition on a fixed fake cluster (the demo's cluster, seed 1, at a
 * fixed time, served by the fake slurmrestd in the newest API version), compared with a committed
 * file: any change to a family, label, value or HELP text shows up as a diff to review. The
 * agent's clock is the fake cluster's, so durations and ages are the same on every run.
 * After an intended change, regenerate with:
 *   UPDATE=1 npx vitest run test/golden/cluster-exposition.test.ts
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterRunner } from '../../src/cluster/agent.js';
import { staticToken } from '../../src/cluster/api/auth.js';
import { SlurmClient } from '../../src/cluster/api/client.js';
import { OPTIONAL_SUB_COLLECTORS } from '../../src/cluster/snapshot.js';
import { DEFAULT_START_MS, FakeCluster } from '../../src/demo/fake-cluster.js';
import { startFakeSlurmrestd, type FakeSlurmrestd } from '../../src/demo/fake-slurmrestd.js';
import { expositionKeyErrors } from '../support/catalogue-keys.js';
import { parseExposition } from '../support/exposition.js';
import { silentLogger } from '../support/log.js';

const GOLDEN = path.resolve('test/golden/cluster-once.prom');
const TOKEN = 'golden-token';
const servers: FakeSlurmrestd[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

/** The samples of each family sorted: the exposition keeps the order the responses listed them in. */
function normalize(text: string): string {
  const out: string[] = [];
  let samples: string[] = [];
  const flush = (): void => {
    out.push(...samples.sort());
    samples = [];
  };
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) {
      flush();
      out.push(line);
    } else if (line !== '') samples.push(line);
  }
  flush();
  return `${out.join('\n')}\n`;
}

describe('cluster agent exposition (golden file)', () => {
  it('one collection of the fixed fake cluster prints exactly test/golden/cluster-once.prom', async () => {
    const clock = (): number => DEFAULT_START_MS;
    const cluster = new FakeCluster({ seed: 1, startMs: DEFAULT_START_MS });
    const server = await startFakeSlurmrestd({
      cluster,
      versions: ['v0.0.45'],
      host: '127.0.0.1',
      port: 0,
      token: TOKEN,
      clock,
    });
    servers.push(server);
    const logger = silentLogger();
    const api = new SlurmClient({
      server: server.url,
      tokenSource: staticToken({ token: TOKEN, userName: 'root' }),
      retries: 0,
      logger,
    });
    const runner = new ClusterRunner({
      source: {
        api,
        jobSource: 'controller',
        accountingLookbackMs: 3_600_000,
        clusterName: cluster.clusterName,
        optional: OPTIONAL_SUB_COLLECTORS,
      },
      collectionIntervalMs: 30_000,
      maxInflight: 1,
      metrics: { host: '127.0.0.1', port: 0 },
      monitoring: { host: '127.0.0.1', port: 0 },
      resource: { serviceName: 'slurm-otel-cluster', serviceVersion: 'VERSION', hostName: 'golden' },
      logger,
      userAccountMetrics: true,
      now: clock,
      close: () => api.close(),
    });
    let text: string;
    try {
      const tick = await runner.collect();
      expect(tick.failed).toEqual([]);
      text = runner.pipeline.exposition.text;
    } finally {
      await runner.shutdown();
    }
    expect(expositionKeyErrors(parseExposition(text))).toEqual([]);
    const actual = normalize(text);
    if (process.env.UPDATE === '1') fs.writeFileSync(GOLDEN, actual);
    expect(actual).toBe(fs.readFileSync(GOLDEN, 'utf8'));
  });
});
