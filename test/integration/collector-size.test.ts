/**
 * The largest push the agents send, through the shipped Collector chain, counted point by point:
 * one OTLP/HTTP push cut by the agents' own pipeline (telemetry/split-push.ts, at its default
 * request size) into requests of which at least one holds more than 4 MiB of protobuf → the
 * node-local Collector (otel-config/collector-agent.yaml as shipped) → OTLP/gRPC → the gateway
 * (otel-config/collector-gateway.yaml as shipped) → :8889 and remote write into Prometheus.
 *
 * 4 MiB is what a gRPC server takes in one message unless told otherwise; a request over it is
 * refused as not retryable and the sending Collector drops it. The cluster agent's pushes reach
 * that size from about a thousand nodes up (bench/gateway-scale.ts --through-agent runs the full
 * scale); here a generated family with long label values gets there with a few tens of thousands of
 * points, so the test stays within what two cores do in a minute. A second case sends one request
 * near the most the node-local Collector's HTTP receiver takes (20 MiB), past the gateway's own
 * limit: the node-local Collector's batch cap must cut it. Both Collectors require the agents'
 * bearer token, so the push carries it (from the chain's token file) as an agent's does, and :8889
 * is read with the scrapers' token.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pipeline, type PushOutcome } from '../../src/telemetry/pipeline.js';
import { defineMetric, type Family } from '../../src/telemetry/spec.js';
import { scrapeGateway, shouldRunCollector } from '../support/collector.js';
import { collectorTelemetry, recordingProxy, startChain, type Chain } from '../support/collector-chain.js';
import { parseExposition } from '../support/exposition.js';
import { silentLogger } from '../support/log.js';
import { findTool, shouldRun, waitFor } from '../support/tools.js';

const prometheus = findTool('prometheus', 'prometheus');
const MiB = 1024 * 1024;
/** The message size a gRPC server takes by default: what the old chain lost pushes over. */
const GRPC_DEFAULT_MAX = 4 * MiB;
/** What the gateway's gRPC receiver takes (collector-gateway.yaml's max_recv_msg_size_mib). */
const GATEWAY_MAX = 16 * MiB;

const sized = defineMetric('gauge', 'test_push_size_point', '', ['point', 'note'], 'One point of a large push.');

/** `count` points, each with a long label value (mostly ASCII text, as Slurm names and comments are). */
function largeFamily(count: number): Family {
  const note = 'x'.repeat(180);
  return {
    spec: sized,
    points: Array.from({ length: count }, (_, i) => ({
      attributes: { point: String(i), note: `${i}-${note}` },
      value: i,
    })),
  };
}

describe.each([
  {
    name: "the agents' own requests (16 MiB estimated), some over 4 MiB",
    POINTS: 40_000,
    maxRequestBytes: undefined,
    largest: GRPC_DEFAULT_MAX,
  },
  {
    // The estimate is 3 bytes per character: this lets one request hold the whole push.
    name: "one request near the HTTP receiver's 20 MiB, over the gateway's 16 MiB",
    POINTS: 72_000,
    maxRequestBytes: 1024 * MiB,
    largest: GATEWAY_MAX,
  },
])('a push of $name → agent Collector → gateway Collector', ({ POINTS, maxRequestBytes, largest }) => {
  describe.runIf(shouldRunCollector() && shouldRun(prometheus))('', { timeout: 300_000 }, () => {
    let dir: string;
    let chain: Chain | undefined;
    let proxy: Awaited<ReturnType<typeof recordingProxy>> | undefined;
    let pipeline: Pipeline | undefined;
    const outcomes: PushOutcome[] = [];

    beforeAll(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-collector-size-'));
      chain = await startChain(dir);
      proxy = await recordingProxy(chain.localHttp);
      pipeline = new Pipeline({
        resource: { serviceName: 'slurm-otel-size', serviceVersion: '0', hostName: 'size' },
        scope: { name: 'size', version: '0' },
        logger: silentLogger(),
        onExport: (o) => outcomes.push(o),
        otlp: {
          url: proxy.url,
          bearerTokenFile: chain.tokens.push,
          protocol: 'http/protobuf',
          intervalMs: 3_600_000,
          timeoutMs: 120_000,
          ...(maxRequestBytes ? { maxRequestBytes } : {}),
        },
      });
      await pipeline.publish([largeFamily(POINTS)]);
      await pipeline.flush();
    }, 240_000);

    afterAll(async () => {
      try {
        await pipeline?.shutdown();
        proxy?.close();
      } finally {
        await chain?.stop();
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('the push holds a request over the size in question, and the agent Collector took it', () => {
      const seen = proxy?.seen ?? [];
      expect(Math.max(...seen.map((s) => s.bytes))).toBeGreaterThan(largest);
      expect(seen.map((s) => s.status)).toEqual(seen.map(() => 200));
      expect(outcomes).toEqual([{ result: 'success', rejectedPoints: 0 }]);
    });

    it("the gateway's :8889 and Prometheus hold every point pushed, and neither Collector counts a loss", async () => {
      const c = chain as Chain;
      const onGateway = async (): Promise<number> =>
        parseExposition(await scrapeGateway(c.gatewayMetrics)).filter((s) => s.name === sized.name).length;
      const inStore = async (): Promise<number> =>
        Number((await c.prom.query(`count(${sized.name})`))[0]?.value[1] ?? 0);
      const failed = (): Promise<number> =>
        collectorTelemetry(c.agTelemetry, 'otelcol_exporter_send_failed_metric_points');
      // Every point, or the agent Collector's give-up on some of them: whichever comes first.
      await waitFor(
        'every point on :8889, or a failed send counted',
        async () => ((await onGateway()) >= POINTS || (await failed()) > 0 ? true : undefined),
        180_000,
      );
      const figures = { pushed: POINTS, onGateway: await onGateway(), sendFailed: await failed() };
      expect(figures).toEqual({ pushed: POINTS, onGateway: POINTS, sendFailed: 0 });
      await waitFor('every point in Prometheus', async () => ((await inStore()) >= POINTS ? true : undefined), 180_000);
      expect(await inStore()).toBe(POINTS);
      expect(await collectorTelemetry(c.gwTelemetry, 'otelcol_receiver_refused_metric_points')).toBe(0);
      expect(await collectorTelemetry(c.gwTelemetry, 'otelcol_receiver_accepted_metric_points')).toBeGreaterThanOrEqual(
        POINTS,
      );
    });

    it('neither Collector logged a warning', () => {
      const c = chain as Chain;
      expect(c.local.warnings(), c.local.log()).toEqual([]);
      expect(c.gateway.warnings(), c.gateway.log()).toEqual([]);
    });
  });
});
