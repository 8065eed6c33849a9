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
