/**
 * The OTLP push's bearer credential comes from a file: sent on every request, read again when the
 * file changes (rewritten in place or renamed over), never shown in a log line; a file that cannot
 * be used stops the start as a configuration error naming the file, not the token.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/cli/common.js';
import { resolveOtlp } from '../../src/cli/otel.js';
import { createLogger } from '../../src/log.js';
import { parseBearerText } from '../../src/telemetry/bearer-file.js';
import { Pipeline } from '../../src/telemetry/pipeline.js';
import { defineMetric } from '../../src/telemetry/spec.js';
import { startReceiver, type Receiver } from '../support/otlp-receiver.js';

const FIRST = 'first-token-0123456789abcdef';
const SECOND = 'second-token-fedcba9876543210';

describe('parseBearerText', () => {
  it('takes the first line that is neither blank nor a comment, trimmed', () => {
    expect(parseBearerText(`# rotated monthly\n\n  ${FIRST}  \n${SECOND}\n`)).toBe(FIRST);
  });

  it('refuses an empty file and a line of two words', () => {
    expect(parseBearerText('\n# nothing\n')).toBeUndefined();
    expect(parseBearerText('Bearer abc\n')).toBeUndefined();
  });
});

describe('--otlp-bearer-token-file', () => {
  let dir: string;
  let rx: Receiver;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-bearer-'));
    rx = await startReceiver();
  });
  afterEach(async () => {
    await rx.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const family = {
    spec: defineMetric('gauge', 'test_value', '', ['id'], 'A value.'),
    points: [{ attributes: { id: '1' }, value: 1 }],
  };

  function pipeline(file: string, lines: string[], protocol: 'http/json' | 'http/protobuf'): Pipeline {
    const destination = new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString()), done()) });
    const otlp = resolveOtlp({ otlpEndpoint: rx.url, otlpProtocol: protocol, otlpBearerTokenFile: file }, {});
    return new Pipeline({
      resource: { serviceName: 'test', serviceVersion: '0', hostName: 'h' },
      scope: { name: 't', version: '0' },
      logger: createLogger({ level: 'debug', format: 'json', destination }),
      otlp: { ...otlp!, intervalMs: 3_600_000 },
    });
  }

  it.each(['http/protobuf', 'http/json'] as const)(
    '%s: sends the token, then the rotated one after a rewrite and after a rename over the file',
    async (protocol) => {
      const file = path.join(dir, 'token');
      fs.writeFileSync(file, `${FIRST}\n`, { mode: 0o600 });
      const lines: string[] = [];
      const p = pipeline(file, lines, protocol);
      try {
        await p.publish([family]);
        await p.flush();
        fs.writeFileSync(file, `# rotated\n${SECOND}\n`);
        await p.flush();
        const next = path.join(dir, 'token.new');
        fs.writeFileSync(next, `${FIRST}\n`);
        fs.renameSync(next, file);
        await p.flush();
        expect(rx.requests.map((r) => r.authorization)).toEqual([
          `Bearer ${FIRST}`,
          `Bearer ${SECOND}`,
          `Bearer ${FIRST}`,
        ]);
        expect(rx.requests.every((r) => r.points.length > 0)).toBe(true);
      } finally {
        await p.shutdown().catch(() => undefined);
      }
    },
  );

  it('a file named by a relative path is the one named at start, wherever the working directory goes', async () => {
    const home = process.cwd();
    fs.writeFileSync(path.join(dir, 'token'), `${FIRST}\n`);
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-bearer-cwd-'));
    fs.writeFileSync(path.join(elsewhere, 'token'), `${SECOND}\n`);
    const lines: string[] = [];
    process.chdir(dir);
    let p: Pipeline | undefined;
    try {
      p = pipeline('token', lines, 'http/protobuf');
      process.chdir(elsewhere);
      await p.publish([family]);
      await p.flush();
      expect(rx.requests.map((r) => r.authorization)).toEqual([`Bearer ${FIRST}`]);
    } finally {
      process.chdir(home);
      await p?.shutdown().catch(() => undefined);
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it('a push whose file went missing fails, is logged without the token, and the next push recovers', async () => {
    const file = path.join(dir, 'token');
    fs.writeFileSync(file, `${FIRST}\n`);
    const lines: string[] = [];
    const p = pipeline(file, lines, 'http/protobuf');
    try {
      await p.publish([family]);
      fs.rmSync(file);
      await p.flush().catch(() => undefined);
      expect(rx.requests).toHaveLength(0);
      const failure = lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.msg === 'OTLP export failed');
      expect(String(failure?.err)).toContain(`cannot read bearer token file ${file}: ENOENT`);
      fs.writeFileSync(file, `${SECOND}\n`);
      await p.flush();
      expect(rx.requests.map((r) => r.authorization)).toEqual([`Bearer ${SECOND}`]);
      // Logged in a message or a field, the token shows redacted.
      createLogger({
        level: 'info',
        format: 'json',
        destination: new Writable({ write: (c: Buffer, _e, d) => (lines.push(c.toString()), d()) }),
      }).info({ header: `Bearer ${SECOND}` }, `token ${FIRST}`);
      expect(lines.join('')).not.toContain(FIRST);
      expect(lines.join('')).not.toContain(SECOND);
    } finally {
      await p.shutdown().catch(() => undefined);
    }
  });

  it.each([
    ['a missing file', null, /cannot read bearer token file .*: ENOENT/],
    ['an empty file', '\n# no token yet\n', /holds no token/],
    ['a header instead of a token', `Bearer ${FIRST}\n`, /holds no token/],
  ])('%s stops the start as a configuration error that names the file only', (_what, content, message) => {
    const file = path.join(dir, 'token');
    if (content !== null) fs.writeFileSync(file, content);
    const start = (): unknown => resolveOtlp({ otlpEndpoint: rx.url, otlpBearerTokenFile: file }, {});
    expect(start).toThrow(ConfigError);
    expect(start).toThrow(message);
    expect(start).not.toThrow(FIRST);
  });

  it('without an endpoint the file is not needed (push is off)', () => {
    expect(resolveOtlp({ otlpBearerTokenFile: path.join(dir, 'absent') }, {})).toBeUndefined();
  });
});
