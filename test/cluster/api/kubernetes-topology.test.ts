/**
 * The node topology source against a fake Kubernetes API on loopback: worker pods of the
 * cluster joined with the labels of the Nodes they run on, as Soperator's exporter reads them.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DENIED_RETRY_MS, kubernetesTopologySource } from '../../../src/cluster/api/kubernetes-topology.js';
import { SlurmCallError } from '../../../src/cluster/api/failures.js';
import { tmpDir } from '../../support/tmp.js';
import { FakeKube } from './fake-kube.js';

const BEARER = 'topology-token';
const WORKER = { 'app.kubernetes.io/instance': 'soperator', 'slurm.nebius.ai/worker': 'true' };
const NODESET = 'slurm.nebius.ai/nodeset-name';
const NVL = 'topology.nebius.com/nvl-instance-group-id';

describe('node topology from the Kubernetes API', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0)) await c();
  });

  async function setup(): Promise<{ kube: FakeKube; kubeconfig: string }> {
    const kube = await FakeKube.start({
      bearer: BEARER,
      secrets: {},
      pods: [
        { namespace: 'slurm', name: 'worker-0', labels: WORKER, nodeName: 'k8s-node-1' },
        { namespace: 'slurm', name: 'worker-1', labels: WORKER, nodeName: 'k8s-node-2' },
        // Not scheduled yet; another cluster's worker; not a worker; another namespace.
        { namespace: 'slurm', name: 'worker-2', labels: WORKER },
        {
          namespace: 'slurm',
          name: 'other-0',
          labels: { ...WORKER, 'app.kubernetes.io/instance': 'other' },
          nodeName: 'k8s-node-1',
        },
        {
          namespace: 'slurm',
          name: 'login-0',
          labels: { 'app.kubernetes.io/instance': 'soperator' },
          nodeName: 'k8s-node-1',
        },
        { namespace: 'elsewhere', name: 'worker-9', labels: WORKER, nodeName: 'k8s-node-1' },
        // On a Node without the NodeSet label: Soperator's exporter does not watch it.
        { namespace: 'slurm', name: 'worker-3', labels: WORKER, nodeName: 'k8s-plain' },
      ],
      nodes: [
        { name: 'k8s-node-1', labels: { [NODESET]: 'gpu-workers', [NVL]: 'nvlig-1' } },
        { name: 'k8s-node-2', labels: { [NODESET]: 'gpu-workers' } },
        { name: 'k8s-plain', labels: { [NVL]: 'nvlig-9' } },
      ],
    });
    cleanup.push(() => kube.close());
    const dir = tmpDir();
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const kubeconfig = join(dir, 'config.json');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        'current-context': 'x',
        clusters: [{ name: 'c', cluster: { server: kube.url } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u', namespace: 'slurm' } }],
        users: [{ name: 'u', user: { token: BEARER } }],
      }),
    );
    return { kube, kubeconfig };
  }

  it("joins the cluster's scheduled worker pods with their Nodes' NodeSet and NVLink group labels", async () => {
    const { kube, kubeconfig } = await setup();
    const source = kubernetesTopologySource({
      access: { kind: 'kubeconfig', path: kubeconfig },
      clusterName: 'soperator',
    });
    const got = await source(new AbortController().signal);
    expect(Object.fromEntries(got)).toEqual({
      'worker-0': { nodesetName: 'gpu-workers', nvlinkInstanceGroup: 'nvlig-1' },
      'worker-1': { nodesetName: 'gpu-workers', nvlinkInstanceGroup: '' },
    });
    // Two list requests, the selectors Soperator's cache uses, with the kubeconfig's token.
    expect(kube.requests.map((r) => decodeURIComponent(r.path)).sort()).toEqual([
      '/api/v1/namespaces/slurm/pods?labelSelector=app.kubernetes.io/instance=soperator,slurm.nebius.ai/worker=true',
      '/api/v1/nodes?labelSelector=slurm.nebius.ai/nodeset-name',
    ]);
    expect(kube.requests.every((r) => r.authorization === `Bearer ${BEARER}`)).toBe(true);
  });

  it("the namespace given wins over the context's", async () => {
    const { kubeconfig } = await setup();
    const source = kubernetesTopologySource({
      access: { kind: 'kubeconfig', path: kubeconfig },
      namespace: 'elsewhere',
      clusterName: 'soperator',
    });
    expect([...(await source(new AbortController().signal)).keys()]).toEqual(['worker-9']);
  });

  it('a refusal is an auth failure the sub-collector counts, naming what the account lacks', async () => {
    const { kube, kubeconfig } = await setup();
    kube.forbidden = true;
    const source = kubernetesTopologySource({
      access: { kind: 'kubeconfig', path: kubeconfig },
      clusterName: 'soperator',
    });
    const err = await source(new AbortController().signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SlurmCallError);
    expect((err as SlurmCallError).failure.kind).toBe('auth');
    expect((err as SlurmCallError).message).toMatch(/list on pods/);
  });

  /** A source on a clock the test moves, and how its next call fails (undefined: it did not). */
  function clocked(kubeconfig: string) {
    let clock = 0;
    const source = kubernetesTopologySource({
      access: { kind: 'kubeconfig', path: kubeconfig },
      clusterName: 'soperator',
      now: () => clock,
    });
    const signal = new AbortController().signal;
    return {
      call: () => source(signal),
      failure: () =>
        source(signal).then(
          () => undefined,
          (e: unknown) => (e as SlurmCallError).failure,
        ),
      advance: (ms: number) => void (clock += ms),
    };
  }

  it('after a refusal asks again only after a while, keeping the last topology read meanwhile', async () => {
    const { kube, kubeconfig } = await setup();
    const s = clocked(kubeconfig);
    const good = await s.call();
    expect(good.size).toBe(2);
    kube.forbidden = true;
    s.advance(1_000);
    expect((await s.failure())?.kind).toBe('auth');
    const asked = kube.requests.length;
    s.advance(DENIED_RETRY_MS - 1);
    // Within the wait: no request, the last topology stands.
    expect(await s.call()).toBe(good);
    expect(kube.requests.length).toBe(asked);
    s.advance(1);
    expect((await s.failure())?.kind).toBe('auth');
    expect(kube.requests.length).toBeGreaterThan(asked);
    kube.forbidden = false;
    s.advance(DENIED_RETRY_MS);
    expect([...(await s.call()).keys()]).toEqual([...good.keys()]);
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
