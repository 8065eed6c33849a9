/**
 * The pipeline writes snapshot families itself for speed; it must write
 * exactly what the SDK's PrometheusSerializer writes for the same points.
 */
import fc from 'fast-check';
import { PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../support/log.js';
import { gunzipSync } from 'node:zlib';
import { Pipeline } from '../../src/telemetry/pipeline.js';
import { GzipWriter } from '../../src/telemetry/prometheus-text.js';
import { toMetricData } from '../../src/telemetry/producer.js';
import { defineMetric, type Family } from '../../src/telemetry/spec.js';

const resource = { serviceName: 'test', serviceVersion: '0', hostName: 'h' };
const scope = { name: 't', version: '0' };
const counter = defineMetric('counter', 'test_things', 'By', ['a', 'b'], 'Things, with a "quote" and a \\ backslash.');
const gauge = defineMetric('gauge', 'test_level', '', ['a'], 'A level.\nSecond line.');
const hist = defineMetric('histogram', 'test_seconds', 's', ['a'], 'Durations.', [1, 5]);

function sdkText(families: Family[], atMs: number): string {
  const sdk = new PrometheusSerializer(undefined, false, undefined, false, true);
  const res = resourceFromAttributes({ 'host.name': 'h', 'service.name': 'test', 'service.version': '0' });
  return sdk.serialize({ resource: res, scopeMetrics: [{ scope, metrics: toMetricData(families, atMs, atMs) }] });
}

async function ourText(families: Family[], atMs: number): Promise<string> {
  const p = new Pipeline({ resource, scope, logger: silentLogger() });
  await p.publish(families, atMs);
  const text = p.exposition.text;
  await p.shutdown();
  return text;
}

const labelValue = fc.string({
  unit: fc.constantFrom('a', 'Z', '0', ' ', '"', '\\', '\n', 'é', '☃', '{', '}', '=', ','),
  maxLength: 8,
});

describe('snapshot families as Prometheus text', () => {
  it('match the SDK serializer byte for byte, whatever the label values (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            a: labelValue,
            b: labelValue,
            v: fc.oneof(fc.integer(), fc.double({ noNaN: true }), fc.bigInt({ min: 0n, max: 1n << 64n })),
          }),
          { maxLength: 6 },
        ),
        fc.array(fc.record({ a: labelValue, v: fc.double({ noNaN: true }) }), { maxLength: 4 }),
        async (cs, gs) => {
          const families: Family[] = [
            { spec: counter, points: cs.map((c) => ({ attributes: { a: c.a, b: c.b }, value: c.v })) },
            { spec: gauge, points: gs.map((g) => ({ attributes: { a: g.a }, value: g.v })) },
          ];
          expect(await ourText(families, 1_700_000_000_000)).toBe(
            sdkText(
              families.filter((f) => f.points.length > 0),
              1_700_000_000_000,
            ),
          );
        },
      ),
      { numRuns: 60 },
    );
  });

  it('match it for histograms and for an empty snapshot', async () => {
    const families: Family[] = [
      {
        spec: hist,
        points: [{ attributes: { a: 'x' }, startTimeMs: 1000, count: 3, sum: 7.5, bucketCounts: [1, 1, 1] }],
      },
      { spec: gauge, points: [{ attributes: { a: 'y' }, value: 2 }] },
    ];
    expect(await ourText(families, 5000)).toBe(sdkText(families, 5000));
    expect(await ourText([], 5000)).toBe(sdkText([], 5000));
  });
});

describe('the gzip writer', () => {
  // Pieces start small and grow, and a string longer than a piece goes to the compressor whole:
  // whatever the lengths, the text comes back in order, every byte once, counted as UTF-8.
  it('gives back exactly what was written, across pieces of every size (property)', async () => {
    // Each write its own character, so a piece written over before it was compressed shows.
    const piece = fc
      .tuple(fc.constantFrom('a', 'b', '{', 'é', '☃'), fc.oneof(fc.nat(64), fc.nat(400_000), fc.nat(3_000_000)))
      .map(([c, n]) => c.repeat(n));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(piece, fc.boolean()), { maxLength: 30 }), async (writes) => {
        const out = new GzipWriter();
        for (const [text, breathe] of writes) {
          out.write(text);
          if (breathe) await out.breathe();
        }
        const { gzip, bytes } = await out.finish();
        const text = writes.map(([t]) => t).join('');
        expect(bytes).toBe(Buffer.byteLength(text));
        expect(gunzipSync(gzip).toString('utf8') === text).toBe(true);
      }),
      { numRuns: 25 },
    );
  });

  it('gives back megabytes of short lines, written through pieces that grow and are reused', async () => {
    const lines = Array.from({ length: 120_000 }, (_, i) => `series_${i}{job="${i % 977}",é="☃"} ${i * 7}\n`);
    const out = new GzipWriter();
    for (const [i, line] of lines.entries()) {
      out.write(line);
      if (i % 5000 === 0) await out.breathe();
    }
    const { gzip, bytes } = await out.finish();
    const text = lines.join('');
    expect(bytes).toBe(Buffer.byteLength(text));
    expect(gunzipSync(gzip).toString('utf8') === text).toBe(true);
  });

  it("gives back a cluster's exposition, written as writeFamilies does: strings of ~64 K characters, a breath after each", async () => {
    const chunks = Array.from({ length: 150 }, (_, i) =>
      `${String.fromCharCode(97 + (i % 26))}${i}\n`.repeat(13_000 + i),
    );
    const out = new GzipWriter();
    for (const chunk of chunks) {
      out.write(chunk);
      await out.breathe();
    }
    const { gzip, bytes } = await out.finish();
    const text = chunks.join('');
    expect(bytes).toBe(Buffer.byteLength(text));
    expect(gunzipSync(gzip).toString('utf8') === text).toBe(true);
  });
});
