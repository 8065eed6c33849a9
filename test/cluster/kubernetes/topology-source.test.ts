/**
 * The topology source against a fake Kubernetes API on loopback: the cluster's worker pods (their
 * NodeSet label) joined with the NVLink group label of the Nodes they run on, as Soperator's
 * exporter reads them (SOPERATOR_COMMIT's TestKubernetesNodeTopologySource and
 * _GetsEachUsedNodeOnce, with the same objects); cached lists over one connection; refusals.
 */
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { CallError } from '../../../src/cluster/http/failure.js';
import {
  DENIED_RETRY_MS,
  kubernetesTopologySource,
  type TopologySource,
} from '../../../src/cluster/kubernetes/topology-source.js';
import { tmpDir } from '../../support/tmp.js';
import { SOPERATOR_COMMIT } from '../soperator.js';
import { FakeKube, writeKubeconfig, type FakeKubeOptions } from './fake-kube.js';

const BEARER = 'topology-token';
const NODESET = 'slurm.nebius.ai/nodeset';
const NVL = 'topology.nebius.com/nvl-instance-group-id';
const worker = (cluster: string, nodeset: string) => ({
  'app.kubernetes.io/instance': cluster,
  [NODESET]: nodeset,
  'slurm.nebius.ai/worker': 'true',
});

/** TestKubernetesNodeTopologySource's objects. */
const SOPERATOR_OBJECTS: Pick<FakeKubeOptions, 'pods' | 'nodes'> = {
  pods: [
    { namespace: 'slurm', name: 'worker-0', labels: worker('cluster-a', 'gpu-workers'), nodeName: 'k8s-node-1' },
    // Pending: not scheduled yet, its NodeSet known all the same.
    { namespace: 'slurm', name: 'worker-1', labels: worker('cluster-a', 'gpu-workers') },
    {
      namespace: 'slurm',
      name: 'other-worker-0',
      labels: worker('cluster-b', 'other-workers'),
      nodeName: 'k8s-node-1',
    },
  ],
  nodes: [
    // The Node's own NodeSet label is not where the NodeSet comes from.
    { name: 'k8s-node-1', labels: { [NVL]: 'nvlig-1', 'slurm.nebius.ai/nodeset-name': 'infrastructure-node-pool' } },
  ],
};

describe(`topology from the Kubernetes API (Soperator ${SOPERATOR_COMMIT.slice(0, 8)})`, () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0)) await c();
  });

  async function setup(objects: Pick<FakeKubeOptions, 'pods' | 'nodes'> = SOPERATOR_OBJECTS) {
    const kube = await FakeKube.start({ bearer: BEARER, secrets: {}, ...objects });
    cleanup.push(() => kube.close());
    const dir = tmpDir();
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const kubeconfig = writeKubeconfig(dir, kube.url, BEARER);
    return { kube, kubeconfig };
  }

  function source(kubeconfig: string, extra: { namespace?: string; now?: () => number } = {}): TopologySource {
    const s = kubernetesTopologySource({
      access: { kind: 'kubeconfig', path: kubeconfig },
      clusterName: 'cluster-a',
      ...extra,
    });
    cleanup.push(() => s.close());
    return s;
  }

  const signal = new AbortController().signal;

  it("TestKubernetesNodeTopologySource: every worker pod of the cluster, its NodeSet from the pod's label", async () => {
    const { kubeconfig } = await setup();
    const got = await source(kubeconfig).read(signal);
    expect(Object.fromEntries(got.byNode)).toEqual({
      'worker-0': { nodesetName: 'gpu-workers', nvlinkInstanceGroup: 'nvlig-1' },
      'worker-1': { nodesetName: 'gpu-workers', nvlinkInstanceGroup: '' },
    });
    expect(got.adjusted).toBe(0);
  });

  it('TestKubernetesNodeTopologySourceGetsEachUsedNodeOnce: two pods on one Node', async () => {
    const { kube, kubeconfig } = await setup({
      pods: [
        { namespace: 'slurm', name: 'worker-0', labels: worker('cluster-a', 'gpu-workers'), nodeName: 'k8s-node-1' },
        { namespace: 'slurm', name: 'worker-1', labels: worker('cluster-a', 'gpu-workers'), nodeName: 'k8s-node-1' },
      ],
      nodes: [{ name: 'k8s-node-1', labels: { [NVL]: 'nvlig-1' } }],
    });
    const got = await source(kubeconfig).read(signal);
    expect(Object.fromEntries(got.byNode)).toEqual({
      'worker-0': { nodesetName: 'gpu-workers', nvlinkInstanceGroup: 'nvlig-1' },
      'worker-1': { nodesetName: 'gpu-workers', nvlinkInstanceGroup: 'nvlig-1' },
    });
    // One list of Nodes, however many pods share one.
    expect(kube.requests.filter((r) => r.path.startsWith('/api/v1/nodes'))).toHaveLength(1);
  });

  it('_SkipsNodeReadsWithoutWorkerPods: no worker pod, no topology', async () => {
    const { kubeconfig } = await setup({ pods: [], nodes: [{ name: 'k8s-node-1', labels: {} }] });
    expect((await source(kubeconfig).read(signal)).byNode.size).toBe(0);
  });

  it('a pod on a Node without the NVLink label has its NodeSet and no group', async () => {
    const { kubeconfig } = await setup({
      pods: [{ namespace: 'slurm', name: 'worker-3', labels: worker('cluster-a', 'cpu'), nodeName: 'k8s-plain' }],
      nodes: [{ name: 'k8s-plain', labels: { 'slurm.nebius.ai/nodeset-name': 'cpu' } }],
    });
    expect(Object.fromEntries((await source(kubeconfig).read(signal)).byNode)).toEqual({
      'worker-3': { nodesetName: 'cpu', nvlinkInstanceGroup: '' },
    });
  });

  it("lists with Soperator's selectors from the API server's cache (resourceVersion=0), with the kubeconfig's token", async () => {
    const { kube, kubeconfig } = await setup();
    await source(kubeconfig).read(signal);
    const asked = kube.requests.map((r) => {
      const u = new URL(r.path, 'http://x');
      return [u.pathname, u.searchParams.get('labelSelector'), u.searchParams.get('resourceVersion')];
    });
    expect(asked).toEqual([
      ['/api/v1/namespaces/slurm/pods', 'app.kubernetes.io/instance=cluster-a,slurm.nebius.ai/worker=true', '0'],
      ['/api/v1/nodes', NVL, '0'],
    ]);
    expect(kube.requests.every((r) => r.authorization === `Bearer ${BEARER}`)).toBe(true);
  });

  it('keeps one connection across lists and refreshes', async () => {
    const { kube, kubeconfig } = await setup();
    const s = source(kubeconfig);
    for (let i = 0; i < 5; i++) await s.read(signal);
    expect(kube.requests).toHaveLength(10);
    expect(kube.connections).toBe(1);
  });

  it.each([
    ['not JSON', '<html>proxy error</html>', /is not JSON/],
    ['no items', '{"kind":"PodList","apiVersion":"v1","metadata":{}}', /has no items list/],
    ['a truncated list', '{"kind":"PodList","items":[{"metadata":{"name":"w', /is not JSON/],
    [
      'an item that is not JSON',
      '{"kind":"PodList","items":[{"metadata":{"name":"w0"}}, tru]}',
      /an item that is not JSON/,
    ],
  ])('a list that is %s is a decode failure', async (_what, body, message) => {
    const { kube, kubeconfig } = await setup();
    kube.rawBody = (p) => (p.endsWith('/pods') ? body : undefined);
    const err = await source(kubeconfig)
      .read(signal)
      .catch((e: unknown) => e);
    expect((err as CallError).failure.kind).toBe('decode');
    expect((err as CallError).message).toMatch(message);
  });

  it('decodes the list item by item: 200 pods with a 100 kB NodeSet label each, every value bounded', async () => {
    const huge = 'n'.repeat(100 * 1024);
    const pods = Array.from({ length: 200 }, (_, i) => ({
      namespace: 'slurm',
      name: `worker-${i}`,
      labels: worker('cluster-a', huge),
      nodeName: 'k8s-node-1',
    }));
    const { kubeconfig } = await setup({ pods, nodes: [{ name: 'k8s-node-1', labels: { [NVL]: 'nvlig-1' } }] });
    const got = await source(kubeconfig).read(signal);
    expect(got.byNode.size).toBe(200);
    expect(got.adjusted).toBe(200);
    expect(got.example).toBe('Pod worker-0 label slurm.nebius.ai/nodeset (102400 bytes)');
    expect([...got.byNode.values()].every((t) => t.nodesetName === 'n'.repeat(256))).toBe(true);
  });

  it("the namespace given wins over the context's", async () => {
    const { kubeconfig } = await setup({
      pods: [
        { namespace: 'slurm', name: 'worker-0', labels: worker('cluster-a', 'a') },
        { namespace: 'elsewhere', name: 'worker-9', labels: worker('cluster-a', 'b') },
      ],
      nodes: [],
    });
    const got = await source(kubeconfig, { namespace: 'elsewhere' }).read(signal);
    expect([...got.byNode.keys()]).toEqual(['worker-9']);
  });

  it('a refusal is an auth failure the sub-collector counts, naming what the account lacks', async () => {
    const { kube, kubeconfig } = await setup();
    kube.forbidden = true;
    const err = await source(kubeconfig)
      .read(signal)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CallError);
    expect((err as CallError).failure.kind).toBe('auth');
    expect((err as CallError).message).toMatch(/list on pods/);
  });

  /** A source on a clock the test moves, and how its next call fails (undefined: it did not). */
  function clocked(kubeconfig: string) {
    let clock = 0;
    const s = source(kubeconfig, { now: () => clock });
    return {
      call: () => s.read(signal),
      failure: () =>
        s.read(signal).then(
          () => undefined,
          (e: unknown) => (e as CallError).failure,
        ),
      advance: (ms: number) => void (clock += ms),
    };
  }

  it('after a refusal asks again only after a while, keeping the last topology read meanwhile', async () => {
    const { kube, kubeconfig } = await setup();
    const s = clocked(kubeconfig);
    const good = await s.call();
    expect(good.byNode.size).toBe(2);
    kube.forbidden = true;
    s.advance(1_000);
    expect((await s.failure())?.kind).toBe('auth');
    const asked = kube.requests.length;
    s.advance(DENIED_RETRY_MS - 1);
    // Within the wait: no request, the last topology stands.
    expect((await s.call()).byNode).toBe(good.byNode);
    expect(kube.requests.length).toBe(asked);
    s.advance(1);
    expect((await s.failure())?.kind).toBe('auth');
    expect(kube.requests.length).toBeGreaterThan(asked);
    kube.forbidden = false;
    s.advance(DENIED_RETRY_MS);
    expect([...(await s.call()).byNode.keys()]).toEqual([...good.byNode.keys()]);
  });

  it('refused from the start: absent (counted once by the collector) until it asks again', async () => {
    const { kube, kubeconfig } = await setup();
    kube.forbidden = true;
    const s = clocked(kubeconfig);
    expect((await s.failure())?.kind).toBe('auth');
    const asked = kube.requests.length;
    s.advance(DENIED_RETRY_MS / 2);
    expect(await s.failure()).toMatchObject({ kind: 'absent', absence: 'known' });
    expect(kube.requests.length).toBe(asked);
  });
});
