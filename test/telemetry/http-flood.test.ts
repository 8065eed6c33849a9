/**
 * Slowloris against the agents' HTTP endpoints, with the attack itself on real sockets: 64
 * connections that never finish their headers, each reopened as soon as it is closed (what took
 * every connection slot before: no scrape answered). Distinct clients are distinct loopback
 * source addresses (127.0.0.x); a scraper sharing the attacker's address is tried too.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_HTTP_LIMITS, serve, textBody, type Endpoint, type ServeExtras } from '../../src/telemetry/http.js';
import { GuardCounts } from '../../src/telemetry/http-guard.js';
import { capturingLogger } from '../support/log.js';
import { scrapeOnce, slowloris, type Attack } from '../support/http-attacks.js';
import { waitFor } from '../support/tools.js';

let endpoint: Endpoint | undefined;
let attack: Attack | undefined;
afterEach(async () => {
  await attack?.stop();
  attack = undefined;
  await endpoint?.close();
  endpoint = undefined;
});

const ATTACK_CONNECTIONS = 64;
/** Scrapes that must be answered during the attack, one after another. */
const SCRAPES = 3;
/** Generous for a loaded machine: each scrape is polled for a minute at most. */
const TEST_MS = (SCRAPES + 1) * 60_000;

async function serveUp(extras: ServeExtras = {}): Promise<Endpoint> {
  const routes = { '/metrics': () => textBody('up 1\n') };
  return serve({ host: '127.0.0.1', port: 0 }, routes, undefined, undefined, DEFAULT_HTTP_LIMITS, extras);
}

/** Polls until `SCRAPES` scrapes from `from` have been answered 200 while the attack runs. */
async function expectScrapesAnswered(ep: Endpoint, from: string): Promise<void> {
  for (let i = 0; i < SCRAPES; i++) {
    const answer = await waitFor(
      `scrape ${i + 1} of ${SCRAPES} from ${from} answered during the attack`,
      async () => {
        const a = await scrapeOnce(`${ep.url}/metrics`, from);
        return a?.status === 200 ? a : undefined;
      },
      60_000,
    );
    expect(answer.body).toBe('up 1\n');
  }
}

/** The attack holds its connections (or as many as the server lets it) before the scrapes start. */
async function underAttack(ep: Endpoint, from: readonly string[]): Promise<Attack> {
  const a = slowloris({ port: ep.port, from, connections: ATTACK_CONNECTIONS });
  await waitFor('the attack opened its connections', () => a.opened() >= ATTACK_CONNECTIONS || undefined);
  return a;
}

describe('slowloris', () => {
  it(
    'answers a scraper on another address while 64 unfinished requests are reopened as closed',
    async () => {
      const counts = new GuardCounts();
      const { logger, lines } = capturingLogger();
      endpoint = await serveUp({ name: 'metrics', counts, logger });
      attack = await underAttack(endpoint, ['127.0.0.2']);
      await expectScrapesAnswered(endpoint, '127.0.0.1');
      // What made room is counted, and logged without a line per connection.
      const evicted = counts.get('connections', 'metrics', 'evicted_address');
      expect(evicted).toBeGreaterThan(1);
      const logged = lines.filter((l) => l.msg === 'HTTP endpoint closed connections to keep serving');
      expect(logged[0]).toMatchObject({ endpoint: 'metrics', source: '127.0.0.2' });
      expect(logged.length).toBeLessThan(evicted);
    },
    TEST_MS,
  );

  it(
    'answers a scraper that shares the attacker address',
    async () => {
      endpoint = await serveUp();
      attack = await underAttack(endpoint, ['127.0.0.1']);
      await expectScrapesAnswered(endpoint, '127.0.0.1');
    },
    TEST_MS,
  );

  it(
    'answers a scraper while the attack rotates over 32 source addresses',
    async () => {
      endpoint = await serveUp();
      attack = await underAttack(
        endpoint,
        Array.from({ length: 32 }, (_, i) => `127.0.0.${i + 2}`),
      );
      await expectScrapesAnswered(endpoint, '127.0.0.1');
    },
    TEST_MS,
  );

  it('leaves a burst of fresh connections from one address alone', async () => {
    endpoint = await serveUp();
    const url = `${endpoint.url}/metrics`;
    const burst = DEFAULT_HTTP_LIMITS.maxUnfinishedPerAddress * 2;
    const answers = await Promise.all(Array.from({ length: burst }, () => scrapeOnce(url)));
    expect(answers.map((a) => a?.status)).toEqual(Array.from({ length: burst }, () => 200));
  });
});
