/**
 * The topology join and the bound on its values: what the Kubernetes API sends never reaches
 * /metrics longer than LABEL_VALUE_MAX_BYTES or with control characters, and a 100 kB label on
 * the Node of 2,000 worker pods leaves /metrics the size it has with ordinary labels.
 */
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { kubernetesTopologySource } from '../../../src/cluster/kubernetes/topology-source.js';
import {
  boundLabelValue,
  LABEL_VALUE_MAX_BYTES,
  NODESET_LABEL,
  NVLINK_GROUP_LABEL,
  topologies,
} from '../../../src/cluster/kubernetes/topology.js';
import type { NodeTopology } from '../../../src/cluster/model.js';
import { tmpDir } from '../../support/tmp.js';
import { Agent } from '../rules/agent-exposition.js';
import { job, node, snapshot } from '../rules/helpers.js';
import { FakeKube, writeKubeconfig, type FakePod } from './fake-kube.js';

const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

describe('boundLabelValue', () => {
  it.each(['', 'gpu-workers', 'nvlig-1', 'x'.repeat(LABEL_VALUE_MAX_BYTES), 'é'.repeat(128), 'ok 🙂 still'])(
    'leaves %j as it is',
    (v) => {
      expect(boundLabelValue(v)).toEqual({ value: v, adjusted: false });
    },
  );

  it.each([
    ['a\rb', 'a\ufffdb'],
    ['a\u0000b', 'a\ufffdb'],
    ['\u001b[31mred', '\ufffd[31mred'],
    ['tab\there', 'tab\ufffdhere'],
    ['new\nline', 'new\ufffdline'],
    ['del\u007f c1\u0085', 'del\ufffd c1\ufffd'],
    ['lone \ud800 high', 'lone \ufffd high'],
    ['lone \udc00 low', 'lone \ufffd low'],
  ])('replaces the control characters and lone surrogates of %j', (raw, want) => {
    expect(boundLabelValue(raw)).toEqual({ value: want, adjusted: true });
  });

  it.each([
    ['ASCII', 'a'.repeat(100_000), 'a'.repeat(LABEL_VALUE_MAX_BYTES)],
    // 2-byte characters: 128 fit exactly; 3-byte: 85 (255 bytes), never half of the 86th.
    ['2-byte', 'é'.repeat(1000), 'é'.repeat(128)],
    ['3-byte', '€'.repeat(1000), '€'.repeat(85)],
    // 4-byte (a surrogate pair each): 64 fit, the pair is never split.
    ['4-byte', '🙂'.repeat(1000), '🙂'.repeat(64)],
    ['a control character past the cut', 'b'.repeat(300) + '\u0000', 'b'.repeat(LABEL_VALUE_MAX_BYTES)],
    // A replacement is 3 bytes for 1: the value is cut again after it.
    ['replacements at the end', 'c'.repeat(254) + '\u0001\u0002', 'c'.repeat(254)],
  ])('cuts %s values to the bound, at a character boundary', (_what, raw, want) => {
    const b = boundLabelValue(raw);
    expect(b).toEqual({ value: want, adjusted: true });
    expect(bytes(b.value)).toBeLessThanOrEqual(LABEL_VALUE_MAX_BYTES);
  });
});

describe('topologies: the join', () => {
  const pod = (name: string, nodeset: string | undefined, nodeName?: string) => ({
    metadata: { name, labels: nodeset === undefined ? {} : { [NODESET_LABEL]: nodeset } },
    spec: nodeName === undefined ? {} : { nodeName },
  });
  const kubeNode = (name: string, group: string) => ({ metadata: { name, labels: { [NVLINK_GROUP_LABEL]: group } } });

  it('every pod has an entry; its group is its Node listed, else ""; no labels read as ""', () => {
    const got = topologies(
      [pod('w0', 'gpu', 'k1'), pod('w1', 'gpu'), pod('w2', undefined, 'k1'), pod('w3', 'cpu', 'k-unlisted'), {}],
      [kubeNode('k1', 'nvl-1'), { metadata: {} }],
    );
    expect(Object.fromEntries(got.byNode)).toEqual({
      w0: { nodesetName: 'gpu', nvlinkInstanceGroup: 'nvl-1' },
      w1: { nodesetName: 'gpu', nvlinkInstanceGroup: '' },
      w2: { nodesetName: '', nvlinkInstanceGroup: 'nvl-1' },
      w3: { nodesetName: 'cpu', nvlinkInstanceGroup: '' },
    });
    expect(got).toMatchObject({ adjusted: 0 });
    expect(got.example).toBeUndefined();
  });

  it('counts each value bounded once where it was read, and names the first without its value', () => {
    const long = 'z'.repeat(5000);
    const got = topologies(
      [pod('w0', 'bad\rset', 'k1'), pod('w1', 'gpu', 'k1'), pod('w2', 'gpu', 'k1')],
      [kubeNode('k1', long)],
    );
    expect(got.adjusted).toBe(2);
    expect(got.example).toBe(`Node k1 label ${NVLINK_GROUP_LABEL} (5000 bytes)`);
    expect(got.byNode.get('w0')).toEqual({ nodesetName: 'bad\ufffdset', nvlinkInstanceGroup: 'z'.repeat(256) });
    expect(got.example).not.toContain('zzz');
  });
});

describe('a 100 kB label on the Node of 2,000 worker pods', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0)) await c();
  });

  const PODS = 2000;
  const HUGE = 100 * 1024;
  const names = Array.from({ length: PODS }, (_, i) => `worker-${i}`);

  async function read(group: string, nodeset: string): Promise<ReadonlyMap<string, NodeTopology>> {
    const labels = {
      'app.kubernetes.io/instance': 'soperator',
      'slurm.nebius.ai/worker': 'true',
      [NODESET_LABEL]: nodeset,
    };
    const pods: FakePod[] = names.map((name) => ({ namespace: 'slurm', name, labels, nodeName: 'k8s-big' }));
    const kube = await FakeKube.start({
      bearer: 't',
      secrets: {},
      pods,
      nodes: [{ name: 'k8s-big', labels: { [NVLINK_GROUP_LABEL]: group } }],
    });
    cleanup.push(() => kube.close());
    const dir = tmpDir();
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const kubeconfig = writeKubeconfig(dir, kube.url, 't');
    const source = kubernetesTopologySource({
      access: { kind: 'kubeconfig', path: kubeconfig },
      clusterName: 'soperator',
    });
    cleanup.push(() => source.close());
    const got = await source.read(new AbortController().signal);
    expect(got.byNode.size).toBe(PODS);
    return got.byNode;
  }

  /** /metrics of one refresh: the 2,000 Slurm nodes, each running one job, with this topology. */
  async function metrics(topology: ReadonlyMap<string, NodeTopology>): Promise<string> {
    const at = Date.UTC(2026, 0, 1);
    const nodes = names.map((n) => node(n, ['ALLOCATED'], { instance_id: `${n}-instance`, tres: 'cpu=8,gres/gpu=8' }));
    const jobs = names.map((n, i) => job(String(1000 + i), ['RUNNING'], { nodes: n, start_time: at / 1000 - 60 }));
    const agent = new Agent();
    await agent.refresh({
      ...snapshot({ atMs: at, seq: 1, nodes, jobs }),
      topology: { value: topology, atMs: at, seq: 1 },
    });
    await agent.shutdown();
    return agent.text;
  }

  it('/metrics grows by at most the bound per series, and carries no control character', async () => {
    const ordinary = await metrics(await read('nvlig-1', 'gpu-workers'));
    // The Node's label 100 kB; each pod's own NodeSet label 4 kB (2,000 of 100 kB would be a
    // 200 MB list: the same bound, at many times the test's cost).
    const hostile = await metrics(await read(`\r${'g'.repeat(HUGE)}`, `\u0000${'n'.repeat(4096)}`));
    // slurm_node_info, slurm_node_job and slurm_node_nvlink_instance_group per Slurm node.
    const series = 3 * PODS;
    const perSeriesGrowth = (hostile.length - ordinary.length) / series;
    console.log(`/metrics: ${ordinary.length} bytes with ordinary labels, ${hostile.length} with 100 kB ones`);
    expect(perSeriesGrowth).toBeLessThanOrEqual(2 * LABEL_VALUE_MAX_BYTES);
    // Unbounded, each of those series would have carried at least one 100 kB or 4 kB value.
    expect(hostile.length).toBeLessThan(series * 2 * LABEL_VALUE_MAX_BYTES + ordinary.length);
    expect(hostile.length).toBeLessThan(10 * 1024 * 1024);
    const control = (c: number): boolean => (c < 0x20 && c !== 0x0a) || (c >= 0x7f && c <= 0x9f);
    expect(Array.from(hostile).some((ch) => control(ch.charCodeAt(0)))).toBe(false);
  });
});
