/**
 * The topology sub-collector is the operator's choice: off by default even in a pod with a
 * service account (whose RBAC grants it nothing), on with `--optional-collectors ...,topology`,
 * refused at start without any Kubernetes access. On, `cluster --once` labels the node and job
 * series with the worker pods' NodeSet and their Nodes' NVLink group.
 */
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { afterEach, describe, expect, it } from 'vitest';
import { addClusterOptions, clusterAgentOptions, type ClusterFlags } from '../../src/cli/cluster.js';
import { ConfigError } from '../../src/cli/common.js';
import { FakeCluster } from '../../src/demo/fake-cluster.js';
import { startFakeSlurmrestd, type FakeSlurmrestd } from '../../src/demo/fake-slurmrestd.js';
import { FakeKube, writeKubeconfig } from '../cluster/kubernetes/fake-kube.js';
import { parseExposition, select } from '../support/exposition.js';
import { tmpDir } from '../support/tmp.js';

const BIN = path.resolve('dist/src/cli/main.js');
const IN_CLUSTER = { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: '1' };

function flags(args: string[]): ClusterFlags {
  const cmd = addClusterOptions(new Command('cluster'))
    .exitOverride()
    .configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  cmd.parse(['--cluster-name', 'c', '--token-source', 'none', '--log-level', 'error', ...args], { from: 'user' });
  return cmd.opts<ClusterFlags>();
}

describe('--optional-collectors topology', () => {
  it('is off by default, in a pod with a service account too', () => {
    const opts = clusterAgentOptions(flags([]), IN_CLUSTER);
    expect(opts.source.topology).toBeUndefined();
    expect(opts.source.optional).toEqual(['partitions']);
    opts.close?.();
  });

  it.each([
    [['--optional-collectors', 'partitions,topology'], IN_CLUSTER],
    [['--optional-collectors', 'topology', '--kubeconfig-path', 'KUBECONFIG'], {}],
  ])('is on when chosen (%j)', (args, env) => {
    // A kubeconfig that exists (its server is only asked at the first collection).
    const kubeconfig = path.join(tmpDir(), 'config');
    writeFileSync(kubeconfig, 'apiVersion: v1\n');
    const opts = clusterAgentOptions(flags(args.map((a) => (a === 'KUBECONFIG' ? kubeconfig : a))), env);
    expect(typeof opts.source.topology).toBe('function');
    expect(opts.source.optional).toContain('topology');
    opts.close?.();
  });

  it('with a kubeconfig that cannot be read: a configuration error at start, not at each collection', () => {
    expect(() =>
      clusterAgentOptions(flags(['--optional-collectors', 'topology', '--kubeconfig-path', '/nonexistent/config']), {}),
    ).toThrow('--kubeconfig-path /nonexistent/config: ENOENT');
  });

  it('chosen without a kubeconfig or an in-cluster environment: a configuration error at start', () => {
    expect(() => clusterAgentOptions(flags(['--optional-collectors', 'topology']), {})).toThrow(ConfigError);
    expect(() => clusterAgentOptions(flags(['--optional-collectors', 'topology']), {})).toThrow(
      /optional collector topology needs --kubeconfig-path/,
    );
  });
});

describe('cluster --once with the topology sub-collector', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  let server: FakeSlurmrestd | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
    for (const c of cleanup.splice(0)) await c();
  });

  function run(
    args: string[],
    env: Record<string, string>,
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? '', ...env } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const kill = setTimeout(() => child.kill('SIGKILL'), 20_000);
      child.on('close', (code) => {
        clearTimeout(kill);
        resolve({ code, stdout, stderr });
      });
    });
  }

  async function setup(): Promise<{ kube: FakeKube; env: Record<string, string>; first: string; second: string }> {
    const cluster = new FakeCluster({ nodes: 4, seed: 3 });
    cluster.advance(30 * 60_000);
    server = await startFakeSlurmrestd({ cluster, versions: ['v0.0.44'], host: '127.0.0.1', port: 0 });
    const [first, second] = cluster.view().nodes.map((n) => n.name) as [string, string];
    const worker = (nodeset: string) => ({
      'app.kubernetes.io/instance': cluster.clusterName,
      'slurm.nebius.ai/worker': 'true',
      'slurm.nebius.ai/nodeset': nodeset,
    });
    const kube = await FakeKube.start({
      bearer: 'kube-token',
      secrets: {},
      pods: [
        { namespace: 'slurm', name: first, labels: worker('gpu-workers'), nodeName: 'k8s-1' },
        { namespace: 'slurm', name: second, labels: worker('pending-set\u0007') },
      ],
      nodes: [{ name: 'k8s-1', labels: { 'topology.nebius.com/nvl-instance-group-id': 'nvlig-1' } }],
    });
    cleanup.push(() => kube.close());
    const dir = tmpDir();
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const kubeconfig = writeKubeconfig(dir, kube.url, 'kube-token');
    const env = {
      SLURM_EXPORTER_CLUSTER_NAME: cluster.clusterName,
      SLURM_EXPORTER_SLURM_API_SERVER: server.url,
      SLURM_EXPORTER_KUBECONFIG_PATH: kubeconfig,
      SLURM_EXPORTER_CLUSTER_NAMESPACE: 'slurm',
    };
    return { kube, env, first, second };
  }

  it('off by default: a kubeconfig alone asks the Kubernetes API nothing', async () => {
    const { kube, env } = await setup();
    const r = await run(['cluster', '--once', '--log-level', 'error', '--token-source', 'none'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(kube.requests).toEqual([]);
    expect(select(parseExposition(r.stdout), 'slurm_node_info').every((s) => s.labels.nodeset_name === '')).toBe(true);
  });

  it('on: nodeset_name from the worker pod (pending too), the NVLink group from its Node, values bounded', async () => {
    const { kube, env, first, second } = await setup();
    const r = await run(['cluster', '--once', '--log-level', 'error', '--token-source', 'none'], {
      ...env,
      SLURM_EXPORTER_OPTIONAL_COLLECTORS: 'partitions,topology',
    });
    expect(r.code, r.stderr).toBe(0);
    expect(kube.requests).toHaveLength(2);
    const samples = parseExposition(r.stdout);
    expect(select(samples, 'slurm_node_info', { node_name: first })[0]?.labels.nodeset_name).toBe('gpu-workers');
    expect(select(samples, 'slurm_node_info', { node_name: second })[0]?.labels.nodeset_name).toBe('pending-set\ufffd');
    expect(select(samples, 'slurm_node_nvlink_instance_group').map((s) => s.labels)).toEqual([
      {
        node_name: first,
        instance_id: expect.any(String),
        nvlink_instance_group: 'nvlig-1',
        nodeset_name: 'gpu-workers',
      },
    ]);
    expect(r.stdout).not.toContain('\u0007');
  });
});
