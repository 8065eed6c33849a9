/**
 * Basic auth: every check does the same bcrypt work whichever user it names, known or not, so that
 * its time tells nothing. The work is counted (2^cost rounds per comparison), not timed.
 */
import bcrypt from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import { BasicAuth, type PasswordVerifier } from '../../src/telemetry/webconfig.js';

const basic = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('basic auth work per check', () => {
  it('is 2^(highest cost) rounds for users of different costs, unknown users and right or wrong passwords', async () => {
    const users = new Map([
      ['cheap', bcrypt.hashSync('pw-cheap', 4)],
      ['dear', bcrypt.hashSync('pw-dear', 7)],
      ['mid', bcrypt.hashSync('pw-mid', 5)],
    ]);
    let rounds = 0;
    const counting: PasswordVerifier = (password, hash) => {
      rounds += 2 ** Number(hash.slice(4, 6));
      return Promise.resolve(bcrypt.compareSync(password, hash));
    };
    const auth = new BasicAuth(users, { verify: counting, maxFailures: 1000 });
    const workOf = async (user: string, password: string): Promise<{ verdict: string; rounds: number }> => {
      rounds = 0;
      const verdict = await auth.check(basic(user, password), `client-${user}-${password}`);
      return { verdict, rounds };
    };
    const attempts = [
      await workOf('cheap', 'wrong'),
      await workOf('dear', 'wrong'),
      await workOf('mid', 'wrong'),
      await workOf('nobody', 'wrong'),
      await workOf('cheap', 'pw-cheap'),
      await workOf('mid', 'pw-mid'),
    ];
    expect(attempts.map((a) => a.rounds)).toEqual(attempts.map(() => 2 ** 7));
    expect(attempts.map((a) => a.verdict)).toEqual(['denied', 'denied', 'denied', 'denied', 'ok', 'ok']);
  });
});
