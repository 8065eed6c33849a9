/**
 * OTLP partial success through the real SDK exporters: a receiver that answers 200 but refuses
 * points. In a file of its own, so that its pipeline is the first of the process and the SDK's
 * diagnostics reach its logger: the test sees that no line per answer is written there either.
 */
import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/log.js';
import { parsePartialSuccess } from '../../src/telemetry/partial-success.js';
import { Pipeline, type PushOutcome } from '../../src/telemetry/pipeline.js';
import { defineMetric, type Family } from '../../src/telemetry/spec.js';
import { startReceiver } from '../support/otlp-receiver.js';

const jobs = defineMetric('counter', 'test_job_things', '', ['job_id'], 'Things per job.');
const resource = { serviceName: 'test', serviceVersion: '0', hostName: 'h' };

function counterFamily(ids: string[]): Family {
  return { spec: jobs, points: ids.map((id) => ({ attributes: { job_id: id }, value: Number(id) })) };
}

describe('parsePartialSuccess', () => {
  it('reads the count as the SDK hands it over, from JSON and protobuf answers, and never goes negative', () => {
    expect(parsePartialSuccess('{"rejectedDataPoints":"12","errorMessage":"bad"}')).toEqual({
      points: 12,
      message: 'bad',
    });
    expect(parsePartialSuccess('{"rejectedDataPoints":3}')).toEqual({ points: 3, message: '' });
    expect(parsePartialSuccess('{"rejectedDataPoints":"-4","errorMessage":"x"}')).toEqual({ points: 0, message: 'x' });
    expect(parsePartialSuccess('not json')).toEqual({ points: 0, message: 'not json' });
  });
});

describe('Pipeline (OTLP partial success)', () => {
  for (const protocol of ['http/json', 'http/protobuf'] as const) {
    it(`counts points a receiver refuses in a 200 answer as a rejected push, one log line per interval (${protocol})`, async () => {
      const rx = await startReceiver();
      const lines: string[] = [];
      const destination = new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString()), done()) });
      const logger = createLogger({ level: 'debug', format: 'json', destination });
      const outcomes: PushOutcome[] = [];
      let nowMs = 1_000_000;
      const p = new Pipeline({
        resource,
        scope: { name: 't', version: '0' },
        logger,
        now: () => nowMs,
        onExport: (o) => outcomes.push(o),
        // Small requests: one push becomes several, each answered with its own refusal.
        otlp: { url: `${rx.url}/v1/metrics`, protocol, intervalMs: 3_600_000, timeoutMs: 5000, maxRequestBytes: 2048 },
      });
      const ids = Array.from({ length: 30 }, (_, i) => String(i + 1));
      await p.publish([counterFamily(ids)]);
      rx.refuseNext(1000, 7, 'out of order sample');
      await p.flush();
      const requests = rx.requests.length;
      expect(requests).toBeGreaterThan(1);
      expect(outcomes).toEqual([{ result: 'rejected', rejectedPoints: 7 * requests }]);
      await p.flush();
      await p.flush();
      const warned = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.level === 'warn');
      // Three refused pushes within the interval: one line, and no line per answer from the SDK.
      expect(warned().map((l) => l.msg)).toEqual(['OTLP push partly refused by the receiver']);
      expect(warned()[0]).toMatchObject({ rejectedPoints: 7 * requests, err: 'out of order sample' });
      nowMs += 60_000;
      await p.flush();
      expect(warned()).toHaveLength(2);
      expect(warned()[1]).toMatchObject({ suppressed: 2 });
      rx.refuseNext(0, 0, '');
      await p.flush();
      expect(outcomes.map((o) => o.result)).toEqual(['rejected', 'rejected', 'rejected', 'rejected', 'success']);
      expect(lines.join('')).not.toContain('Partial Success');
      await p.shutdown();
      await rx.close();
    });
  }
});
