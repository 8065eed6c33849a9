/**
 * The project's Collector configs in the real OpenTelemetry Collector (built by
 * scripts/collector/build.sh from scripts/collector/manifest.yaml), end to end with real programs
 * only: two node agent processes on a synthetic node tree push OTLP/HTTP (one protobuf, one JSON)
 * to the node-local Collector (otel-config/collector-agent.yaml), which forwards OTLP/gRPC to the
 * gateway (otel-config/collector-gateway.yaml), which serves :8889 and remote-writes into a real
 * Prometheus (and is scraped by a second one with honor_labels); the cluster agent (on a fake
 * slurmrestd) pushes through the same chain. Per family, what arrives equals the agents' direct
 * /metrics, with the mapping that deploy/README.md documents. Then faults: the gateway down while
 * the node agent pushes, and the cluster agent's pushes counted. The configs are loaded as
 * shipped; only their listen addresses are moved to free loopback ports (a second config merged
 * over the first).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterRunner } from '../../src/cluster/agent.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { CounterDrift, demoTree } from '../../src/demo/scenarios.js';
import { parse } from 'yaml';
import {
  COLLECTOR_COMPONENTS,
  PUSH_TOKEN,
  SCRAPE_TOKEN,
  collectorPath,
  SCRAPE_HEADERS,
  scrapeGateway,
  shouldRunCollector,
  startCollector,
  tokenFiles,
  warningLines,
  type RunningCollector,
} from '../support/collector.js';
import { clusterAgentOptions, fakeSlurm } from '../support/agents.js';
import { parseExposition, sumOf, valueOf, type Sample } from '../support/exposition.js';
import { startNodeAgentProcess, type AgentProcess } from '../support/node-agent-process.js';
import { treeFlags } from '../support/node-tree.js';
import { startPrometheus, type PrometheusServer } from '../support/prometheus.js';
import { compareAnswers, questionsOver } from '../support/same-answers.js';
import {
  AGENT_CONFIG,
  GATEWAY_CONFIG,
  collectorTelemetry as telemetry,
  listenOn,
  ports,
  remoteWriteStore,
  startChain,
  storeHistory,
  type Chain,
} from '../support/collector-chain.js';
import { eventuallyEqual, expectedFromDirect, line, ours } from '../support/series-lines.js';
import { findTool, freePort, run, shouldRun, stopChild, toolPath, waitFor } from '../support/tools.js';
import { REAL_SLURM_START_TIMEOUT_MS, realSlurmGate, startRealSlurm, type RealSlurm } from '../support/real-slurm.js';
import { realSlurmRunner } from '../support/real-slurm-agent.js';

const CLUSTER = 'coltest';
const prometheus = findTool('prometheus', 'prometheus');
const runCollector = shouldRunCollector();

describe.runIf(runCollector)('the Collector configs as shipped', () => {
  it('the build holds exactly the components test/delivery allows the configs to name', async () => {
    const r = await run(collectorPath(), ['components']);
    expect(r.code, r.stderr).toBe(0);
    const listed = parse(r.stdout) as Record<string, { name: string }[] | null>;
    const kinds = Object.keys(COLLECTOR_COMPONENTS) as (keyof typeof COLLECTOR_COMPONENTS)[];
    const names = (k: keyof typeof COLLECTOR_COMPONENTS): string[] => (listed[k] ?? []).map((c) => c.name).sort();
    expect(Object.fromEntries(kinds.map((k) => [k, names(k)]))).toEqual(
      Object.fromEntries(kinds.map((k) => [k, [...COLLECTOR_COMPONENTS[k]].sort()])),
    );
  });

  it.each([AGENT_CONFIG, GATEWAY_CONFIG])('%s passes `otelcol validate` without a warning', async (config) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-validate-'));
    const env = { PATH: process.env.PATH ?? '', ...tokenFiles(dir).env };
    const r = await run(collectorPath(), ['validate', '--config', `file:${path.resolve(config)}`], '', env);
    fs.rmSync(dir, { recursive: true, force: true });
    const out = r.stdout + r.stderr;
    expect({ code: r.code, warnings: warningLines(out) }, out).toEqual({ code: 0, warnings: [] });
  });
});

/** The series of the families named in `families` that Prometheus holds, as comparable lines. */
async function storedLines(prom: PrometheusServer, families: (name: string) => boolean): Promise<string[]> {
  return (await prom.query('{__name__=~".+"}'))
    .filter((r) => families(r.metric.__name__ as string))
    .map((r) => {
      const { __name__: name, ...labels } = r.metric;
      return line(name as string, labels, r.value[1]);
    });
}

describe.runIf(runCollector && shouldRun(prometheus))(
  'node agents → agent Collector → gateway Collector → :8889 and Prometheus remote write',
  { timeout: 180_000 },
  () => {
    let dir: string;
    let chain: Chain | undefined;
    const agents: AgentProcess[] = [];
    let direct: Map<string, Sample[]>;

    beforeAll(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-collector-'));
      // A still node: its counters moved once and then stay, so every path sees the same values.
      const roots = writeTree(path.join(dir, 'tree'), demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
      new CounterDrift(roots.sysfs).tick(5);

      chain = await startChain(dir);
      for (const [node, protocol] of [
        ['gpu-001', 'http/protobuf'],
        ['gpu-002', 'http/json'],
      ] as const) {
        agents.push(
          await startNodeAgentProcess([
            ...treeFlags(roots),
            '--node-name',
            node,
            '--otlp-endpoint',
            `http://127.0.0.1:${chain.localHttp}/v1/metrics`,
            '--otlp-protocol',
            protocol,
            '--otlp-interval',
            '1s',
            '--otlp-bearer-token-file',
            chain.tokens.push,
          ]),
        );
      }
      direct = new Map();
      for (const [i, node] of ['gpu-001', 'gpu-002'].entries()) {
        const agent = agents[i] as AgentProcess;
        // The first cycle may still be under way when /metrics first answers: wait for the device.
        const samples = await waitFor(`${node}'s first cycle`, async () => {
          const s = parseExposition(await (await fetch(agent.url)).text());
          return s.some((x) => x.name === 'ib_slurm_device_info') ? s : undefined;
        });
        direct.set(node, samples);
      }
    });

    afterAll(async () => {
      for (const a of agents) await stopChild(a.child);
      await chain?.stop();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    /** The running chain (beforeAll has started it when a test runs). */
    const c = (): Chain => chain as Chain;
    const expected = (stored = false): string[] =>
      [...direct].flatMap(([node, samples]) =>
        expectedFromDirect(samples, { job: 'slurm-otel-node', instance: node, cluster: CLUSTER, stored }),
      );

    it("the gateway's :8889 serves every family of the direct scrapes, same names, labels and values", async () => {
      await eventuallyEqual('the families on :8889', expected(), async () =>
        parseExposition(await scrapeGateway(c().gatewayMetrics))
          .filter((s) => ours(s.name))
          .map((s) => line(s.name, s.labels, s.value)),
      );
    });

    it('Prometheus receives the same series through remote write', async () => {
      await eventuallyEqual('the families in Prometheus', expected(true), () => storedLines(c().prom, ours));
    });

    it('the dashboards and the alert rules give the same answers on the Collector path as on a direct scrape', async () => {
      // A direct scrape labelled as otel-config/prometheus.yml labels it (job, instance = node, slurm_cluster).
      const targets = agents.map((a, i) => ({
        target: new URL(a.url).host,
        labels: { instance: `gpu-00${i + 1}`, slurm_cluster: CLUSTER },
      }));
      const scraper = await startPrometheus(toolPath(prometheus), fs.mkdtempSync(path.join(dir, 'direct-')), {
        'slurm-otel-node': targets,
      });
      try {
        const carried = new Set([...direct.values()].flatMap((samples) => samples.map((x) => x.name)));
        const questions = questionsOver((name) => carried.has(name));
        expect(questions.length).toBeGreaterThan(20);
        const { differing, answered } = await compareAnswers(c().prom, scraper, questions);
        expect(differing, differing.join('\n')).toEqual([]);
        expect(answered).toBeGreaterThanOrEqual(15);
      } finally {
        await scraper.stop();
      }
    });

    it("the Collectors' own telemetry has the families the alert rules and docs watch, under this release's names", async () => {
      await waitFor('points sent by the gateway', async () =>
        /^otelcol_exporter_sent_metric_points\{[^}]*exporter="prometheus_remote_write"/m.test(
          await (await fetch(c().gwTelemetry)).text(),
        ),
      );
      for (const url of [c().gwTelemetry, c().agTelemetry]) {
        const names = new Set(parseExposition(await (await fetch(url)).text()).map((s) => s.name));
        for (const name of ['otelcol_receiver_accepted_metric_points', 'otelcol_receiver_refused_metric_points'])
          expect(names, `${url} has ${name}`).toContain(name);
        expect(names, `${url} has otelcol_exporter_queue_size`).toContain('otelcol_exporter_queue_size');
        // Renamed in v0.155: the memory limiter counts under its own name now.
        expect(names, url).not.toContain('otelcol_processor_refused_metric_points');
        expect(names, url).toContain('otelcol_processor_memory_limiter_accepted_metric_points');
      }
    });

    it('a Prometheus scraping :8889 with honor_labels stores the same series (path C)', async () => {
      const scraper = await startPrometheus(
        toolPath(prometheus),
        fs.mkdtempSync(path.join(dir, 'scraper-')),
        { 'otel-gateway': [new URL(c().gatewayMetrics).host] },
        [],
        [],
        ['otel-gateway'],
        undefined,
        { 'otel-gateway': c().tokens.scrape },
      );
      try {
        await eventuallyEqual('the families scraped from :8889', expected(true), () => storedLines(scraper, ours));
      } finally {
        await scraper.stop();
      }
    });

    it('neither Collector logged a warning or a deprecation', () => {
      expect(c().gateway.warnings(), c().gateway.log()).toEqual([]);
      expect(c().local.warnings(), c().local.log()).toEqual([]);
    });
  },
);

/**
 * An OTLP/JSON request that claims to come from gpu-001's node agent: one point of `metric` for
 * job 4242, as a user of the node (or anyone who reaches the gateway) could write it.
 */
function forgedPush(metric: string): string {
  const str = (key: string, value: string) => ({ key, value: { stringValue: value } });
  const point = {
    asDouble: 1,
    timeUnixNano: `${BigInt(Date.now()) * 1_000_000n}`,
    attributes: [str('job_id', '4242')],
  };
  return JSON.stringify({
    resourceMetrics: [
      {
        resource: { attributes: [str('service.name', 'slurm-otel-node'), str('host.name', 'gpu-001')] },
        scopeMetrics: [{ scope: { name: 'forger' }, metrics: [{ name: metric, gauge: { dataPoints: [point] } }] }],
      },
    ],
  });
}

/** The HTTP status of one OTLP/JSON push of `body` to `port`, with `authorization` when given. */
async function pushStatus(port: number, body: string, authorization?: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/v1/metrics`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

describe.runIf(runCollector && shouldRun(prometheus))(
  'authentication where data enters: the shipped configs require the bearer token',
  { timeout: 180_000 },
  () => {
    let dir: string;
    let chain: Chain | undefined;
    let rogue: RunningCollector | undefined;
    const c = (): Chain => chain as Chain;
    /** The forged families that reached :8889, by name. */
    const forgedOnGateway = async (): Promise<string[]> =>
      parseExposition(await scrapeGateway(c().gatewayMetrics))
        .filter((s) => s.name.startsWith('forged_') && s.labels.job_id === '4242' && s.labels.instance === 'gpu-001')
        .map((s) => s.name)
        .sort();

    beforeAll(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-collector-auth-'));
      chain = await startChain(dir);
    });

    afterAll(async () => {
      await rogue?.stop();
      await chain?.stop();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it.each([
      ['the gateway', (ch: Chain) => ch.gatewayHttp, 'gw'],
      ['the node-local Collector', (ch: Chain) => ch.localHttp, 'local'],
    ] as const)(
      '%s refuses a push without the token or with another credential, and takes the one with it',
      async (_where, port, tag) => {
        const refused = {
          none: await pushStatus(port(c()), forgedPush(`forged_${tag}_none`)),
          wrong: await pushStatus(port(c()), forgedPush(`forged_${tag}_wrong`), 'Bearer not-the-token-0123456789'),
          basic: await pushStatus(port(c()), forgedPush(`forged_${tag}_basic`), 'Basic dXNlcjpwYXNz'),
          bare: await pushStatus(port(c()), forgedPush(`forged_${tag}_bare`), PUSH_TOKEN),
        };
        expect(refused).toEqual({ none: 401, wrong: 401, basic: 401, bare: 401 });
        expect(await pushStatus(port(c()), forgedPush(`forged_${tag}_token`), `Bearer ${PUSH_TOKEN}`)).toBe(200);
        // The accepted push arrives; none of the refused ones (pushed before it) ever does.
        await waitFor(`forged_${tag}_token on :8889`, async () =>
          (await forgedOnGateway()).includes(`forged_${tag}_token`),
        );
        expect((await forgedOnGateway()).filter((n) => n.startsWith(`forged_${tag}_`))).toEqual([
          `forged_${tag}_token`,
        ]);
      },
    );

    it(":8889 answers only a scraper with the scrapers' token (not the agents' one)", async () => {
      const status = async (authorization?: string): Promise<number> => {
        const res = await fetch(c().gatewayMetrics, { headers: authorization ? { authorization } : {} });
        await res.arrayBuffer();
        return res.status;
      };
      expect({
        none: await status(),
        agents: await status(`Bearer ${PUSH_TOKEN}`),
        scrapers: await status(`Bearer ${SCRAPE_TOKEN}`),
      }).toEqual({ none: 401, agents: 401, scrapers: 200 });
    });

    it('a node-local Collector holding another token forwards nothing: the gateway refuses its gRPC requests', async () => {
      const other = path.join(dir, 'other-token');
      fs.writeFileSync(other, 'another-nodes-token-0123456789', { mode: 0o600 });
      const ag = await ports();
      rogue = await startCollector(
        AGENT_CONFIG,
        listenOn(ag),
        { OTEL_GATEWAY_ENDPOINT: `127.0.0.1:${c().gatewayGrpc}`, OTLP_TOKEN_FILE: other },
        fs.mkdtempSync(path.join(dir, 'rogue-')),
        `http://127.0.0.1:${ag.health}/`,
      );
      // Taken locally (the token of its own file), refused at the gateway.
      expect(await pushStatus(ag.http, forgedPush('forged_rogue'), 'Bearer another-nodes-token-0123456789')).toBe(200);
      const agTelemetry = `http://127.0.0.1:${ag.telemetry}/metrics`;
      await waitFor(
        'the rogue Collector counting its refused points',
        async () => (await telemetry(agTelemetry, 'otelcol_exporter_send_failed_metric_points')) > 0,
        120_000,
      );
      expect(await telemetry(agTelemetry, 'otelcol_exporter_sent_metric_points')).toBe(0);
      expect(await forgedOnGateway()).not.toContain('forged_rogue');
      expect(rogue.log()).toMatch(/Unauthenticated/);
    });
  },
);

const openssl = findTool('openssl', 'openssl');

/** A self-signed certificate for 127.0.0.1 (its own CA), as PEM files in `dir`. */
function selfSigned(dir: string): { cert: string; key: string } {
  const cert = path.join(dir, 'tls.crt');
  const key = path.join(dir, 'tls.key');
  const args = ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1'];
  execFileSync(toolPath(openssl), [...args, '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], {
    stdio: 'ignore',
  });
  return { cert, key };
}

/** GET over HTTPS trusting `ca` only; the body, or a throw naming the status. */
function httpsText(url: string, ca: Buffer, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca, headers }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${url}: ${res.statusCode}`))));
      })
      .on('error', reject);
  });
}

describe.runIf(runCollector && shouldRun(openssl))(
  'TLS: collector-gateway-tls.yaml and collector-agent-tls.yaml over the shipped configs',
  { timeout: 180_000 },
  () => {
    let dir: string;
    let gateway: RunningCollector | undefined;
    let local: RunningCollector | undefined;
    let agent: AgentProcess | undefined;

    afterAll(async () => {
      if (agent) await stopChild(agent.child);
      await local?.stop();
      await gateway?.stop();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it('the agent (https, NODE_EXTRA_CA_CERTS) and the node-local Collector (gRPC with TLS) arrive; :8889 is HTTPS', async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-collector-tls-'));
      const { cert, key } = selfSigned(dir);
      const tokens = tokenFiles(dir);
      const [gw, ag, exposition] = [await ports(), await ports(), await freePort()];
      gateway = await startCollector(
        GATEWAY_CONFIG,
        listenOn(gw, { exporters: { prometheus: { endpoint: `127.0.0.1:${exposition}` } } }),
        {
          SLURM_CLUSTER_NAME: CLUSTER,
          // No store in this test: the remote write fails and retries, :8889 is what is checked.
          PROMETHEUS_REMOTE_WRITE_URL: `http://127.0.0.1:${await freePort()}/api/v1/write`,
          TLS_CERT_FILE: cert,
          TLS_KEY_FILE: key,
        },
        dir,
        `http://127.0.0.1:${gw.health}/`,
        ['otel-config/collector-gateway-tls.yaml'],
      );
      local = await startCollector(
        AGENT_CONFIG,
        listenOn(ag),
        { OTEL_GATEWAY_ENDPOINT: `127.0.0.1:${gw.grpc}`, TLS_CA_FILE: cert },
        dir,
        `http://127.0.0.1:${ag.health}/`,
        ['otel-config/collector-agent-tls.yaml'],
      );
      const roots = writeTree(path.join(dir, 'tree'), demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
      agent = await startNodeAgentProcess(
        [
          ...treeFlags(roots),
          '--node-name',
          'gpu-001',
          '--otlp-endpoint',
          `https://127.0.0.1:${gw.http}/v1/metrics`,
          '--otlp-interval',
          '1s',
          '--otlp-bearer-token-file',
          tokens.push,
        ],
        { NODE_EXTRA_CA_CERTS: cert },
      );
      expect(await pushStatus(ag.http, forgedPush('forged_via_tls'), `Bearer ${PUSH_TOKEN}`)).toBe(200);
      const ca = fs.readFileSync(cert);
      const url = `https://127.0.0.1:${exposition}/metrics`;
      await waitFor(
        'the agent’s series and the forwarded point on :8889 over HTTPS',
        async () => {
          const names = new Set(
            parseExposition(await httpsText(url, ca, SCRAPE_HEADERS))
              .filter((x) => x.labels.instance === 'gpu-001')
              .map((x) => x.name),
          );
          return names.has('ib_slurm_device_info') && names.has('forged_via_tls');
        },
        120_000,
      );
      // Plain HTTP to the TLS receiver is not taken, even with the token.
      expect(await pushStatus(gw.http, forgedPush('forged_plain'), `Bearer ${PUSH_TOKEN}`).catch(() => 0)).not.toBe(
        200,
      );
    });
  },
);

type FakeSlurm = Awaited<ReturnType<typeof fakeSlurm>>;

/** `sumOf` over a Collector's own telemetry at `url`. */
/** How long the gateway stays down in the outage test. */
const OUTAGE_MS = 120_000;

describe.runIf(runCollector && shouldRun(prometheus))(
  'gateway down for 2 minutes: the node-local Collector queues, and nothing is lost when the gateway returns',
  { timeout: 480_000 },
  () => {
    let dir: string;
    let prom: PrometheusServer | undefined;
    let gateway: RunningCollector | undefined;
    let local: RunningCollector | undefined;
    let agent: AgentProcess | undefined;

    afterAll(async () => {
      if (agent) await stopChild(agent.child);
      await local?.stop();
      await gateway?.stop();
      await prom?.stop();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it('holds the pushes while no gateway listens for 2 minutes, then delivers every point once, every sample stored', async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-collector-down-'));
      const roots = writeTree(path.join(dir, 'tree'), demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
      prom = await remoteWriteStore(dir);
      const [gw, ag, exposition] = [await ports(), await ports(), await freePort()];
      const localTelemetry = `http://127.0.0.1:${ag.telemetry}/metrics`;
      const gatewayTelemetry = `http://127.0.0.1:${gw.telemetry}/metrics`;
      local = await startCollector(
        AGENT_CONFIG,
        listenOn(ag),
        { OTEL_GATEWAY_ENDPOINT: `127.0.0.1:${gw.grpc}` },
        dir,
        `http://127.0.0.1:${ag.health}/`,
      );
      agent = await startNodeAgentProcess([
        ...treeFlags(roots),
        '--node-name',
        'gpu-001',
        '--otlp-endpoint',
        `http://127.0.0.1:${ag.http}/v1/metrics`,
        '--otlp-bearer-token-file',
        tokenFiles(dir).push,
        // Pushes at twice the cycle interval (1 s): each carries a new snapshot, so each point has a
        // timestamp of its own and becomes one sample (a repeated snapshot would be one sample twice).
        '--otlp-interval',
        '2s',
      ]);
      const queued = { exporter: 'otlp_grpc' };
      const downSince = Date.now();
      // The gateway is down: the pushes are accepted locally and wait in the sending queue.
      await waitFor(
        'batches waiting in the local queue',
        async () => (await telemetry(localTelemetry, 'otelcol_exporter_queue_size', queued)) >= 2,
        120_000,
      );
      // The outage lasts 2 minutes (the fault's length, not a measured one): long enough for the
      // oldest batch's retries to reach their 30 s ceiling and for the queue to hold a hundred pushes.
      await waitFor('a 2-minute outage', () => Date.now() - downSince >= OUTAGE_MS || undefined, OUTAGE_MS + 60_000);
      expect(await telemetry(localTelemetry, 'otelcol_exporter_sent_metric_points', queued)).toBe(0);

      gateway = await startCollector(
        GATEWAY_CONFIG,
        listenOn(gw, { exporters: { prometheus: { endpoint: `127.0.0.1:${exposition}` } } }),
        { SLURM_CLUSTER_NAME: CLUSTER, PROMETHEUS_REMOTE_WRITE_URL: `${prom.url}/api/v1/write` },
        dir,
        `http://127.0.0.1:${gw.health}/`,
      );
      await stopChild(agent.child);
      // No sender is left: what the local Collector accepted is final, and all of it must pass.
      const accepted = await telemetry(localTelemetry, 'otelcol_receiver_accepted_metric_points');
      expect(accepted).toBeGreaterThan(0);
      const counts = async (): Promise<Record<string, number>> => ({
        sentByLocal: await telemetry(localTelemetry, 'otelcol_exporter_sent_metric_points', queued),
        failedByLocal: await telemetry(localTelemetry, 'otelcol_exporter_send_failed_metric_points'),
        acceptedByGateway: await telemetry(gatewayTelemetry, 'otelcol_receiver_accepted_metric_points'),
        writtenByGateway: await telemetry(gatewayTelemetry, 'otelcol_exporter_sent_metric_points', {
          exporter: 'prometheus_remote_write',
        }),
        stillQueued: await telemetry(localTelemetry, 'otelcol_exporter_queue_size', queued),
        refusedByStore: await telemetry(gatewayTelemetry, 'otelcol_exporter_send_failed_metric_points', {
          exporter: 'prometheus_remote_write',
        }),
      });
      const want = {
        sentByLocal: accepted,
        failedByLocal: 0,
        acceptedByGateway: accepted,
        writtenByGateway: accepted,
        stillQueued: 0,
        refusedByStore: 0,
      };
      let last: Record<string, number> = {};
      await waitFor(
        'every accepted point through the gateway',
        async () => {
          last = await counts();
          return JSON.stringify(last) === JSON.stringify(want);
        },
        120_000,
      ).catch(() => undefined);
      expect(last, gateway.warnings().slice(0, 20).join('\n')).toEqual(want);
      // Counted in the store itself. Every push carries every series of the still tree (the node
      // agent pushes gauges and sums only: a sample per point), so the store must hold each push
      // whole: the same timestamps for every series. Two pushes of one snapshot (a cycle late on a
      // loaded machine) share their timestamps and are one sample each; nothing else may be missing.
      const { series, samples, timestamps } = await waitFor(
        'the samples in Prometheus',
        async () => {
          const h = await storeHistory(prom!);
          return h.samples === h.series * h.timestamps && h.timestamps > 0 ? h : undefined;
        },
        60_000,
      );
      expect(samples).toBe(series * timestamps);
      expect(accepted % series).toBe(0);
      const pushes = accepted / series;
      expect(timestamps).toBeLessThanOrEqual(pushes);
      expect(timestamps, `${pushes} pushes stored as ${timestamps} timestamps`).toBeGreaterThanOrEqual(0.9 * pushes);
      expect(gateway.warnings(), gateway.log()).toEqual([]);
    });
  },
);

describe.runIf(runCollector)(
  "the cluster agent's OTLP pushes are counted as the node agent's",
  { timeout: 120_000 },
  () => {
    const TOKEN = 'collector-test-token';
    let dir: string;
    let local: RunningCollector | undefined;
    let slurm: FakeSlurm | undefined;
    const runners: ClusterRunner[] = [];

    afterAll(async () => {
      for (const r of runners) await r.shutdown();
      await slurm?.server.close();
      await local?.stop();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    /** One collection pushed to `url`; the runner's slurm_exporter_otlp_exports_total by result. */
    async function pushOnce(url: string): Promise<Record<string, number | undefined>> {
      const runner = new ClusterRunner(
        clusterAgentOptions(slurm as FakeSlurm, TOKEN, { otlpUrl: url, otlpBearerTokenFile: tokenFiles(dir).push }),
      );
      runners.push(runner);
      expect((await runner.collect()).failed).toEqual([]);
      await runner.pipeline.flush();
      const self = parseExposition((await runner.selfExposition()).text);
      return Object.fromEntries(
        ['success', 'failure'].map((result) => [
          result,
          valueOf(self, 'slurm_exporter_otlp_exports_total', { result }),
        ]),
      );
    }

    it('a push the Collector accepts counts as a success, one nobody takes as a failure', async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-collector-cluster-'));
      slurm = await fakeSlurm(['v0.0.44'], TOKEN);
      const ag = await ports();
      local = await startCollector(
        AGENT_CONFIG,
        listenOn(ag),
        { OTEL_GATEWAY_ENDPOINT: `127.0.0.1:${await freePort()}` },
        dir,
        `http://127.0.0.1:${ag.health}/`,
      );
      expect(await pushOnce(`http://127.0.0.1:${ag.http}/v1/metrics`)).toEqual({ success: 1, failure: undefined });
      const accepted = await telemetry(
        `http://127.0.0.1:${ag.telemetry}/metrics`,
        'otelcol_receiver_accepted_metric_points',
      );
      expect(accepted).toBeGreaterThan(0);
      expect(await pushOnce(`http://127.0.0.1:${await freePort()}/v1/metrics`)).toEqual({
        success: undefined,
        failure: 1,
      });
    });
  },
);

/** A cluster agent collecting once from some slurmrestd, pushing to the chain when flushed. */
interface ClusterSource {
  /**
   * A cluster agent pushing to `otlpUrl` with the token of `tokenFile`, in requests of at most
   * `maxRequestBytes` (the default when absent).
   */
  start(otlpUrl: string, tokenFile: string, maxRequestBytes?: number): Promise<ClusterRunner>;
  stop(): Promise<void>;
}

function fakeClusterSource(): ClusterSource {
  const TOKEN = 'collector-chain-token';
  let slurm: FakeSlurm | undefined;
  return {
    start: async (otlpUrl, tokenFile, maxRequestBytes) => {
      slurm = await fakeSlurm(['v0.0.44'], TOKEN);
      const options = clusterAgentOptions(slurm, TOKEN, { otlpUrl, otlpBearerTokenFile: tokenFile });
      const otlp = { ...options.otlp!, ...(maxRequestBytes ? { maxRequestBytes } : {}) };
      return new ClusterRunner({ ...options, otlp });
    },
    stop: async () => {
      await slurm?.server.close();
    },
  };
}

function realClusterSource(): ClusterSource {
  let slurm: RealSlurm | undefined;
  const logs: string[] = [];
  return {
    start: async (otlpUrl, tokenFile) => {
      // With slurmdbd: the runner also reads the accounting limits.
      slurm = await startRealSlurm({ instance: 'col', dbd: true });
      return realSlurmRunner(slurm, { jobSource: 'controller', logs, otlpUrl, otlpBearerTokenFile: tokenFile });
    },
    stop: async () => {
      await slurm?.stop();
      expect(logs).toEqual([]);
    },
  };
}

const realSlurm = realSlurmGate();

/**
 * The local Collector's body limit in the fake cluster's chain: far below the cluster agent's
 * collection, so that only a push cut into requests under it gets through.
 */
const SMALL_BODY_LIMIT = 16 * 1024;

describe.each([
  {
    name: 'a fake slurmrestd (v0.0.44), pushes cut under a 16 KiB body limit',
    run: true,
    source: fakeClusterSource,
    limit: SMALL_BODY_LIMIT,
  },
  { name: 'a real Slurm 22.05', run: !realSlurm.skip, source: realClusterSource, limit: undefined },
])(
  'cluster agent on $name → agent Collector → gateway Collector → :8889 and Prometheus remote write',
  ({ run, source, limit }) => {
    describe.runIf(runCollector && shouldRun(prometheus) && run)(
      '',
      { timeout: REAL_SLURM_START_TIMEOUT_MS + 180_000 },
      () => {
        let dir: string;
        let chain: Chain | undefined;
        const cluster = source();
        let runner: ClusterRunner | undefined;
        let expected: string[] = [];
        let stored: string[] = [];
        let families: Set<string>;

        beforeAll(async () => {
          dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-collector-cluster-chain-'));
          chain = await startChain(dir, limit);
          runner = await cluster.start(`http://127.0.0.1:${chain.localHttp}/v1/metrics`, chain.tokens.push, limit);
          expect((await runner.collect()).failed).toEqual([]);
          await runner.pipeline.flush();
          const text = runner.pipeline.exposition.text;
          // Cut or refused: one request could not hold what the exposition holds.
          if (limit !== undefined) expect(text.length).toBeGreaterThan(4 * limit);
          const direct = parseExposition(text);
          families = new Set(direct.map((s) => s.name));
          expect(families).toContain('slurm_node_info');
          expected = expectedFromDirect(direct, { job: 'slurm-otel-cluster', instance: 'test', cluster: CLUSTER });
          stored = expectedFromDirect(direct, {
            job: 'slurm-otel-cluster',
            instance: 'test',
            cluster: CLUSTER,
            stored: true,
          });
        }, REAL_SLURM_START_TIMEOUT_MS + 60_000);

        afterAll(async () => {
          // The chain stops even when the source's own checks fail (its processes would outlive the run).
          try {
            await runner?.shutdown();
            await cluster.stop();
          } finally {
            await chain?.stop();
            if (dir) fs.rmSync(dir, { recursive: true, force: true });
          }
        });

        it("the gateway's :8889 serves every family of the cluster agent's /metrics", async () => {
          await eventuallyEqual('the cluster families on :8889', expected, async () =>
            parseExposition(await scrapeGateway((chain as Chain).gatewayMetrics))
              .filter((s) => families.has(s.name))
              .map((s) => line(s.name, s.labels, s.value)),
          );
        });

        it('Prometheus receives the same series through remote write', async () => {
          await eventuallyEqual('the cluster families in Prometheus', stored, () =>
            storedLines((chain as Chain).prom, (n) => families.has(n)),
          );
        });
      },
    );
  },
);

describe.runIf(runCollector && shouldRun(prometheus))(
  'gateway refusing (memory_limiter), then restarted with the shipped limits: the node agent counts and recovers',
  { timeout: 240_000 },
  () => {
    let dir: string;
    let prom: PrometheusServer | undefined;
    let gateway: RunningCollector | undefined;
    let agent: AgentProcess | undefined;

    afterAll(async () => {
      if (agent) await stopChild(agent.child);
      await gateway?.stop();
      await prom?.stop();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it('failed pushes are counted while the gateway refuses, successful ones once it accepts again', async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-collector-refuse-'));
      const roots = writeTree(path.join(dir, 'tree'), demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
      prom = await remoteWriteStore(dir);
      const [gw, exposition] = [await ports(), await freePort()];
      const start = (extra: Record<string, unknown>): Promise<RunningCollector> =>
        startCollector(
          GATEWAY_CONFIG,
          listenOn(gw, { exporters: { prometheus: { endpoint: `127.0.0.1:${exposition}` } }, ...extra }),
          {
            SLURM_CLUSTER_NAME: CLUSTER,
            PROMETHEUS_REMOTE_WRITE_URL: `${(prom as PrometheusServer).url}/api/v1/write`,
          },
          dir,
          `http://127.0.0.1:${gw.health}/`,
        );
      // A limit below what any Collector's heap holds: every push is refused, as under memory pressure.
      gateway = await start({
        processors: { memory_limiter: { check_interval: '100ms', limit_mib: 2, spike_limit_mib: 1 } },
      });
      agent = await startNodeAgentProcess([
        ...treeFlags(roots),
        '--node-name',
        'gpu-001',
        '--otlp-endpoint',
        `http://127.0.0.1:${gw.http}/v1/metrics`,
        '--otlp-interval',
        '1s',
        '--otlp-timeout',
        '2s',
        '--otlp-bearer-token-file',
        tokenFiles(dir).push,
      ]);
      const exports = async (result: string): Promise<number> =>
        sumOf(
          parseExposition(await (await fetch((agent as AgentProcess).monitoringUrl)).text()),
          'ib_slurm_exporter_otlp_exports_total',
          {
            result,
          },
        );
      const gwTelemetry = `http://127.0.0.1:${gw.telemetry}/metrics`;
      await waitFor('refused pushes counted by the agent', async () => (await exports('failure')) >= 2, 120_000);
      expect(await exports('success')).toBe(0);
      expect(await telemetry(gwTelemetry, 'otelcol_processor_memory_limiter_refused_metric_points')).toBeGreaterThan(0);

      await gateway.stop();
      gateway = await start({});
      await waitFor('pushes accepted again', async () => (await exports('success')) >= 2, 120_000);
      await (prom as PrometheusServer).waitFor('ib_slurm_device_info{instance="gpu-001"}');
      expect(gateway.warnings(), gateway.log()).toEqual([]);
    });
  },
);
