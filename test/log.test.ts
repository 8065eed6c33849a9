/** Logging: every line is redacted of registered secrets and URL passwords, whatever carries them. */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, redactSecrets, redactUrl, registerSecret } from '../src/log.js';

function capture(format: 'json' | 'plain') {
  const lines: string[] = [];
  const destination = new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString()), done()) });
  return { logger: createLogger({ level: 'debug', format, destination }), text: () => lines.join('') };
}

describe('log redaction', () => {
  it.each(['json', 'plain'] as const)(
    'removes a registered token from the message, fields and errors (%s)',
    (format) => {
      const token = 'tok-4f1c9e2a7b-not-a-jwt';
      registerSecret(token);
      const { logger, text } = capture(format);
      logger.error(
        { err: new Error(`slurmrestd said: invalid token ${token}`), body: { errors: [{ description: token }] } },
        `request with ${token} failed`,
      );
      expect(text()).not.toContain(token);
      // The message, the body field, and the error (its message and its stack).
      expect(text().match(/<redacted>/g)?.length).toBe(4);
    },
  );

  it('removes a secret that JSON escapes, as it appears in a JSON line', () => {
    const secret = 'pa"ss\\word-9';
    registerSecret(secret);
    const { logger, text } = capture('json');
    logger.warn({ detail: `got ${secret}` }, 'x');
    expect(text()).not.toContain(JSON.stringify(secret).slice(1, -1));
    expect(JSON.parse(text()).detail).toBe('got <redacted>');
  });

  it('replaces URL passwords, keeping the user and the address', () => {
    const { logger, text } = capture('json');
    logger.info({ url: 'https://bob:s3cr3t@otlp.example:4318/v1/metrics' }, 'push to http://u:p@10.0.0.1:80/');
    expect(text()).not.toMatch(/s3cr3t|u:p@/);
    expect(text()).toContain('https://bob:<redacted>@otlp.example:4318/v1/metrics');
    expect(redactUrl('http://127.0.0.1:4318/v1/metrics')).toBe('http://127.0.0.1:4318/v1/metrics');
  });

  it('leaves short values and ordinary text alone', () => {
    registerSecret('abc');
    registerSecret(undefined);
    expect(redactSecrets('abc abcdef')).toBe('abc abcdef');
  });
});

describe('log lines hold what users chose without being changed by it', () => {
  // A process's name is set by its user (prctl, exec of a file named so): 15 bytes of anything.
  const forged = 'x\n2026-01-01T00:00:00.000Z ERROR forged line';
  const coloured = '\x1b[31mred\x1b[0m';
  const shown = '\u202eevil\u2028\x9b2J\x7f';

  function logAll(format: 'json' | 'plain'): string {
    const { logger, text } = capture(format);
    logger.warn(
      { pid: 4242, comm: forged, other: coloured, 'k\ney': shown, nested: { comm: shown } },
      `fd table of ${forged}`,
    );
    logger.error({ err: new Error(`bad ${coloured}\nmore`) }, 'failed');
    return text();
  }

  it('plain: every message, field name and value has its controls escaped, one line per record', () => {
    const out = logAll('plain');
    const lines = out.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\S+ WARN fd table of x\\n2026-01-01T00:00:00.000Z ERROR forged line pid=4242 /);
    expect(lines[0]).toContain('comm=x\\n2026-01-01T00:00:00.000Z ERROR forged line');
    expect(lines[0]).toContain('other=\\x1b[31mred\\x1b[0m');
    expect(lines[0]).toContain('k\\ney=\\u202eevil\\u2028\\x9b2J\\x7f');
    expect(lines[0]).toContain('nested={"comm":"\\u202eevil\\u2028\\u009b2J\\u007f"}');
    expect(lines[1]).toMatch(/^\S+ ERROR failed err=.*bad \\u001b\[31mred/);
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    expect(out).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
  });

  it('plain: a backslash is doubled, so an escape cannot be passed off as one', () => {
    const { logger, text } = capture('plain');
    logger.info({ path: 'C:\\n' }, 'a\\nb');
    expect(text()).toMatch(/ INFO a\\\\nb path=C:\\\\n\n$/);
  });

  it('json: one line per record, the values exactly as given, nothing a terminal acts on raw', () => {
    const out = logAll('json');
    const lines = out.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(2);
    const first = JSON.parse(lines[0] as string) as Record<string, unknown>;
    expect(first).toMatchObject({ comm: forged, other: coloured, 'k\ney': shown, nested: { comm: shown } });
    expect(first.msg).toBe(`fd table of ${forged}`);
    expect((JSON.parse(lines[1] as string) as { err: { message: string } }).err.message).toBe(`bad ${coloured}\nmore`);
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    expect(out).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
  });
});

describe('the shape of a log line', () => {
  const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

  it('json: the level by name and the time in ISO 8601, first, as a log pipeline reads them', () => {
    const { logger, text } = capture('json');
    logger.debug('d');
    logger.info('i');
    logger.warn('w');
    logger.error('e');
    const lines = text()
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.level)).toEqual(['debug', 'info', 'warn', 'error']);
    for (const l of lines) expect(l.time).toMatch(ISO);
    expect(text().split('\n')[0]).toMatch(/^\{"level":"debug","time":"[^"]+","msg":"d"\}$/);
  });

  it('plain: the ISO time, then the level in capitals, then the message', () => {
    const { logger, text } = capture('plain');
    logger.warn({ n: 1 }, 'w');
    const [when, level, ...rest] = text().trimEnd().split(' ');
    expect(when).toMatch(ISO);
    expect([level, ...rest]).toEqual(['WARN', 'w', 'n=1']);
  });
});
