/**
 * Secrets that the URL pattern could not bound (a password with a quote or a space, a bare key as
 * the user name) and token-like text a server sends back never reach a log line; a failing OTLP
 * endpoint gives one line per failure, rate-limited, without a stack trace.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, redactTokenLike, redactUrl } from '../src/log.js';
import { resolveOtlp } from '../src/cli/otel.js';
import { describeBody, notAnObject } from '../src/cluster/api/decode/envelope.js';
import { Pipeline } from '../src/telemetry/pipeline.js';
import { defineMetric } from '../src/telemetry/spec.js';
import { startReceiver } from './support/otlp-receiver.js';

function capture(format: 'json' | 'plain' = 'json') {
  const lines: string[] = [];
  const destination = new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString()), done()) });
  return { logger: createLogger({ level: 'debug', format, destination }), lines };
}

describe('OTLP endpoint credentials', () => {
  const cases = [
    ['a raw quote in the password', 'http://user:pa"ss-quoted-1@127.0.0.1:4318/v1/metrics', 'pa"ss-quoted-1'],
    ['a space in the password', 'http://user:pass with-space-2@127.0.0.1:4318/v1/metrics', 'pass with-space-2'],
    ['a bare key as user name', 'http://KEY0123456789abcdef@127.0.0.1:4318/v1/metrics', 'KEY0123456789abcdef'],
    ['a short bare key', 'http://k3y@127.0.0.1:4318/v1/metrics', 'k3y'],
  ] as const;

  it.each(cases)('redactUrl hides %s, keeping the address', (_what, url, secret) => {
    const out = redactUrl(url);
    expect(out).not.toContain(secret);
    expect(out).toContain('<redacted>@127.0.0.1:4318/v1/metrics');
  });

  it.each(cases)('no log line shows %s, whatever field or message carries the URL', (_what, url, secret) => {
    resolveOtlp({ otlpEndpoint: url }, {});
    for (const format of ['json', 'plain'] as const) {
      const { logger, lines } = capture(format);
      logger.info({ otlp: redactUrl(url) }, `pushing to ${redactUrl(url)}`);
      if (secret.length >= 8) logger.warn({ raw: url }, `a message echoing ${url}`);
      expect(lines.join('')).not.toContain(secret);
      expect(lines.join('')).not.toContain(JSON.stringify(secret).slice(1, -1));
    }
  });

  it('a URL that is not one is refused without showing its password', () => {
    expect(() => resolveOtlp({ otlpEndpoint: 'http://u:se"cret-9 x@[bad' }, {})).toThrow(/<redacted>/);
    expect(() => resolveOtlp({ otlpEndpoint: 'http://u:se"cret-9 x@[bad' }, {})).not.toThrow(/cret-9/);
  });
});

describe('slurmrestd bodies', () => {
  const jwt = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjE3OTYxNzI1NTl9.c2lnbmF0dXJl';

  it('a JSON string body that is (or starts with) a token shows none of it', () => {
    for (const body of [jwt, `${jwt} was refused`, `token ${jwt}`, 'x'.repeat(30) + jwt]) {
      const text = describeBody(body) + notAnObject(body, '/slurm/v0.0.40/jobs').message;
      for (let i = 0; i + 6 <= jwt.length; i += 6) expect(text).not.toContain(jwt.slice(i, i + 6));
    }
  });

  it('keeps plain words and error codes', () => {
    expect(describeBody('Unauthorized')).toBe('a string starting "Unauthorized"');
    expect(redactTokenLike('ESLURM_REST_INVALID_QUERY for job 4711')).toBe('ESLURM_REST_INVALID_QUERY for job 4711');
  });
});

describe('a failing OTLP endpoint', () => {
  const family = {
    spec: defineMetric('gauge', 'test_value', '', ['id'], 'A value.'),
    points: [{ attributes: { id: '1' }, value: 1 }],
  };

  it('logs one line per failure, the first at once, then at most one a minute with the count, no stack', async () => {
    const rx = await startReceiver();
    const { logger, lines } = capture();
    let nowMs = 1_000_000;
    const p = new Pipeline({
      resource: { serviceName: 'test', serviceVersion: '0', hostName: 'h' },
      scope: { name: 't', version: '0' },
      logger,
      now: () => nowMs,
      otlp: { url: `${rx.url}/v1/metrics`, protocol: 'http/json', intervalMs: 3_600_000, timeoutMs: 1000 },
    });
    try {
      rx.failNext(1000);
      await p.publish([family]);
      const flush = async (): Promise<void> => p.flush().catch(() => undefined);
      const failureLines = (): Record<string, unknown>[] =>
        lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => /OTLP|otel/.test(String(l.msg)));
      await flush();
      expect(failureLines()).toHaveLength(1);
      nowMs += 10_000;
      await flush();
      nowMs += 10_000;
      await flush();
      expect(failureLines()).toHaveLength(1);
      nowMs += 60_000;
      await flush();
      expect(failureLines()).toHaveLength(2);
      expect(failureLines()[1]).toMatchObject({ msg: 'OTLP export failed', suppressed: 2 });
      expect(lines.join('')).not.toMatch(/\bat .*\.js:\d+|"stack"/);
      expect(failureLines().every((l) => l.level === 'warn')).toBe(true);
      rx.failNext(0);
      await p.flush();
      expect(failureLines().at(-1)).toMatchObject({ msg: 'OTLP export failed: succeeded again', failures: 4 });
    } finally {
      await p.shutdown().catch(() => undefined);
      await rx.close();
    }
  });
});
