/**
 * Wrong passwords from rotating source addresses against an endpoint with basic auth, on real
 * sockets and the real bcrypt worker: the flood keeps the comparison queue full, and a scraper
 * must still get in (before, one not verified yet was answered 429 throughout).
 */
import bcrypt from 'bcryptjs';
import { afterEach, describe, expect, it } from 'vitest';
import { serve, textBody, type Endpoint } from '../../src/telemetry/http.js';
import { GuardCounts } from '../../src/telemetry/http-guard.js';
import { stopPasswordWorker } from '../../src/telemetry/webconfig.js';
import { passwordFlood, scrapeOnce, type Flood } from '../support/http-attacks.js';
import { waitFor } from '../support/tools.js';

let endpoint: Endpoint | undefined;
let flood: Flood | undefined;
afterEach(async () => {
  await flood?.stop();
  flood = undefined;
  await endpoint?.close();
  endpoint = undefined;
  await stopPasswordWorker();
});

const basic = (s: string): string => `Basic ${Buffer.from(s).toString('base64')}`;
/** Tens of ms a comparison: the flood below asks far more than the worker can compare. */
const COST = 10;
const USERS = new Map([
  ['prom', bcrypt.hashSync('right', COST)],
  ['grafana', bcrypt.hashSync('other', COST)],
]);
/** In flight at once: more than the queue's 32 places, fewer than the 64 connection slots. */
const CONCURRENCY = 48;
const TEST_MS = 120_000;

async function serveWithAuth(counts: GuardCounts): Promise<Endpoint> {
  // A failure limit no flood reaches here: it stands for an attacker with many more addresses.
  const security = { users: USERS, auth: { maxFailures: 1_000_000 } };
  return serve(
    { host: '127.0.0.1', port: 0 },
    { '/metrics': () => textBody('up 1\n') },
    undefined,
    security,
    undefined,
    {
      name: 'metrics',
      counts,
    },
  );
}

/** Polls until a scrape from `from` with `authorization` is answered 200. */
async function expectAnswered(url: string, from: string, authorization: string): Promise<void> {
  await waitFor(
    `a scrape from ${from} answered 200 during the flood`,
    async () => (await scrapeOnce(`${url}/metrics`, from, { authorization }))?.status === 200 || undefined,
    60_000,
  );
}

/** The flood has filled the queue: some of its requests were told to retry. */
async function saturated(counts: GuardCounts): Promise<void> {
  await waitFor('the flood answered 429', () => (flood?.statuses().get(429) ?? 0) > 0 || undefined);
  const throttled = ['queue_full', 'displaced', 'address_queue'].map((r) => counts.get('auth', 'metrics', r));
  expect(throttled.reduce((a, b) => a + b)).toBeGreaterThan(0);
}

describe('basic auth under a rotating-address flood', () => {
  it(
    'lets a scraper never verified in while 100 addresses keep the queue full',
    async () => {
      const counts = new GuardCounts();
      endpoint = await serveWithAuth(counts);
      flood = passwordFlood({
        url: `${endpoint.url}/metrics`,
        from: (n) => `127.0.0.${2 + (n % 100)}`,
        concurrency: CONCURRENCY,
        authorization: (n) => basic(`prom:guess${n}`),
      });
      await saturated(counts);
      await expectAnswered(endpoint.url, '127.0.0.1', basic('prom:right'));
    },
    TEST_MS,
  );

  it(
    'lets an address that passed before in ahead of a flood where every request has a new address',
    async () => {
      const counts = new GuardCounts();
      endpoint = await serveWithAuth(counts);
      await expectAnswered(endpoint.url, '127.0.0.1', basic('prom:right'));
      flood = passwordFlood({
        url: `${endpoint.url}/metrics`,
        // 127.1.0.0/16: a new address for every request of the test.
        from: (n) => `127.1.${Math.floor(n / 250) % 250}.${1 + (n % 250)}`,
        concurrency: CONCURRENCY,
        authorization: (n) => basic(`prom:guess${n}`),
      });
      await saturated(counts);
      // Not cached (another user): it waits for the worker, ahead of every address never seen.
      await expectAnswered(endpoint.url, '127.0.0.1', basic('grafana:other'));
    },
    TEST_MS,
  );
});
