import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/log.js';
import { silentLogger } from '../support/log.js';
import { Pipeline } from '../../src/telemetry/pipeline.js';
import { defineMetric, type Family } from '../../src/telemetry/spec.js';
import { startReceiver } from '../support/otlp-receiver.js';

const jobs = defineMetric('counter', 'test_job_things', '', ['job_id'], 'Things per job.');
const level = defineMetric('gauge', 'test_level', '', ['job_id'], 'A level.');
const resource = { serviceName: 'test', serviceVersion: '0', hostName: 'h' };

function counterFamily(ids: string[], startTimeMs?: number): Family {
  return { spec: jobs, points: ids.map((id) => ({ attributes: { job_id: id }, value: Number(id), startTimeMs })) };
}

const lines = (text: string, name: string) => text.split('\n').filter((l) => l.startsWith(name));

describe('Pipeline (producer → Prometheus rendering)', () => {
  it('exports exactly the latest snapshot: no ghost series after a job ends', async () => {
    const p = new Pipeline({ resource, scope: { name: 't', version: '0' }, logger: silentLogger() });
    await p.publish([counterFamily(['1', '2', '3'])]);
    expect(lines(p.exposition.text, 'test_job_things_total')).toHaveLength(3);
    await p.publish([counterFamily(['2', '3'])]);
    const after = lines(p.exposition.text, 'test_job_things_total');
    expect(after).toEqual(['test_job_things_total{job_id="2"} 2', 'test_job_things_total{job_id="3"} 3']);
    await p.shutdown();
  });

  it('has no 2000-series cap per family', async () => {
    const p = new Pipeline({ resource, scope: { name: 't', version: '0' }, logger: silentLogger() });
    const ids = Array.from({ length: 5000 }, (_, i) => String(i + 1));
    await p.publish([
      counterFamily(ids),
      { spec: level, points: ids.map((id) => ({ attributes: { job_id: id }, value: 1 })) },
    ]);
    expect(lines(p.exposition.text, 'test_job_things_total')).toHaveLength(5000);
    expect(lines(p.exposition.text, 'test_level')).toHaveLength(5000);
    expect(p.exposition.text).not.toContain('otel_metric_overflow');
    expect(p.producer.size).toBe(10_000);
    await p.shutdown();
  });

  it('answers 503 before the first publish', async () => {
    const p = new Pipeline({ resource, scope: { name: 't', version: '0' }, logger: silentLogger() });
    expect(p.exposition.status).toBe(503);
    await p.shutdown();
  });
});

describe('Pipeline (producer → OTLP push)', () => {
  for (const protocol of ['http/json', 'http/protobuf'] as const) {
    it(`pushes each series with its own start time and drops ended ones (${protocol})`, async () => {
      const rx = await startReceiver();
      const p = new Pipeline({
        resource,
        scope: { name: 't', version: '0' },
        logger: silentLogger(),
        otlp: { url: `${rx.url}/v1/metrics`, protocol, intervalMs: 3_600_000, timeoutMs: 5000 },
      });
      await p.publish([counterFamily(['1', '2'], 1_700_000_000_000)]);
      await p.flush();
      await p.publish([counterFamily(['2'], 1_700_000_000_000)]);
      await p.flush();
      expect(rx.requests).toHaveLength(2);
      const [first, second] = rx.requests;
      expect(first?.contentType).toContain(protocol === 'http/json' ? 'json' : 'protobuf');
      expect(first?.resource['service.name']).toBe('test');
      const of = (r: typeof first) => (r?.points ?? []).filter((x) => x.metric === 'test_job_things');
      expect(of(first).map((x) => [x.attributes.job_id, x.value, x.monotonic, x.startNs])).toEqual([
        ['1', 1, true, 1_700_000_000_000_000_000n],
        ['2', 2, true, 1_700_000_000_000_000_000n],
      ]);
      expect(of(second).map((x) => x.attributes.job_id)).toEqual(['2']);
      await p.shutdown();
      await rx.close();
    });
  }

  it('counts a failed push and keeps going', async () => {
    const rx = await startReceiver();
    const results: boolean[] = [];
    const p = new Pipeline({
      resource,
      scope: { name: 't', version: '0' },
      logger: silentLogger(),
      onExport: (o) => results.push(o.result === 'success'),
      otlp: { url: `${rx.url}/v1/metrics`, protocol: 'http/json', intervalMs: 3_600_000, timeoutMs: 2000 },
    });
    rx.failNext(100);
    await p.publish([counterFamily(['1'])]);
    await p.flush().catch(() => undefined);
    rx.failNext(0);
    await p.flush();
    expect(results[0]).toBe(false);
    expect(results.at(-1)).toBe(true);
    expect(rx.requests.length).toBeGreaterThan(0);
    await p.shutdown();
    await rx.close();
  });
});

describe('Pipeline secrets', () => {
  it('never logs the password of an OTLP endpoint URL, at start or on a failed push', async () => {
    const rx = await startReceiver();
    const lines: string[] = [];
    const destination = new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString()), done()) });
    const logger = createLogger({ level: 'debug', format: 'plain', destination });
    const url = rx.url.replace('http://', 'http://otlp-user:otlp-pass-123@') + '/v1/metrics';
    const p = new Pipeline({
      resource,
      scope: { name: 't', version: '0' },
      logger,
      otlp: { url, protocol: 'http/json', intervalMs: 3_600_000, timeoutMs: 2000 },
    });
    logger.info({ otlp: url }, `started, pushing to ${url}`);
    rx.failNext(100);
    await p.publish([counterFamily(['1'])]);
    await p.flush().catch(() => undefined);
    await p.shutdown().catch(() => undefined);
    await rx.close();
    expect(lines.join('')).toMatch(/OTLP export failed/);
    expect(lines.join('')).toContain('otlp-user:<redacted>@');
    expect(lines.join('')).not.toContain('otlp-pass-123');
  });
});

describe('Pipeline events (SDK synchronous instruments)', () => {
  const fails = defineMetric('counter', 'test_fails', '', ['node_name'], 'Failures.');
  const outage = defineMetric('histogram', 'test_outage_seconds', 's', ['node_name'], 'Outages.', [30, 60, 300]);

  it('accumulates counter events beyond 2000 series without overflow', async () => {
    const p = new Pipeline({
      resource,
      scope: { name: 't', version: '0' },
      logger: silentLogger(),
      eventSpecs: [fails, outage],
    });
    const nodes = Array.from({ length: 3000 }, (_, i) => `n${i}`);
    p.record(nodes.map((n) => ({ spec: fails, value: 1, attributes: { node_name: n } })));
    p.record([{ spec: fails, value: 2, attributes: { node_name: 'n0' } }]);
    await p.publish([]);
    const rows = lines(p.exposition.text, 'test_fails_total{');
    expect(rows).toHaveLength(3000);
    expect(rows).toContain('test_fails_total{node_name="n0"} 3');
    expect(p.exposition.text).not.toContain('otel_metric_overflow');
    await p.shutdown();
  });

  it('observes histogram events into the buckets the catalogue declares', async () => {
    const p = new Pipeline({
      resource,
      scope: { name: 't', version: '0' },
      logger: silentLogger(),
      eventSpecs: [fails, outage],
    });
    p.record([45, 100, 4000].map((v) => ({ spec: outage, value: v, attributes: { node_name: 'a' } })));
    await p.publish([]);
    const buckets = lines(p.exposition.text, 'test_outage_seconds_bucket');
    expect(buckets).toEqual([
      'test_outage_seconds_bucket{node_name="a",le="30"} 0',
      'test_outage_seconds_bucket{node_name="a",le="60"} 1',
      'test_outage_seconds_bucket{node_name="a",le="300"} 2',
      'test_outage_seconds_bucket{node_name="a",le="+Inf"} 3',
    ]);
    expect(() =>
      p.record([{ spec: defineMetric('counter', 'undeclared', '', [], 'x'), value: 1, attributes: {} }]),
    ).toThrow(/not declared/);
    await p.shutdown();
  });
});
