import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
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
    await p.publish([counterFamily(ids), { spec: level, points: ids.map((id) => ({ attributes: { job_id: id }, value: 1 })) }]);
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
        resource, scope: { name: 't', version: '0' }, logger: silentLogger(),
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
      resource, scope: { name: 't', version: '0' }, logger: silentLogger(), onExport: (ok) => results.push(ok),
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
