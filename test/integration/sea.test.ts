/**
 * The single executable (scripts/sea/build.sh) runs where no Node is installed and nothing of the
 * package is on disk: in a Debian trixie chroot made with debootstrap --variant=minbase
 * (scripts/sea/chroot.sh), holding the executable and a synthetic node tree only. There it prints
 * its help, explains the tree, runs `node --once`, reads a cluster (a fake slurmrestd on loopback),
 * serves /metrics behind basic auth (bcrypt, in a worker thread: code the bundle carries as text)
 * and stops on SIGTERM with status 0.
 */
import fs from 'node:fs';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeCluster } from '../../src/demo/fake-cluster.js';
import { startFakeSlurmrestd } from '../../src/demo/fake-slurmrestd.js';
import type { TreeRoots } from '../../src/demo/nodetree.js';
import { parseExposition, select } from '../support/exposition.js';
import {
  canRunChroot,
  demoTreeIn,
  nonodeChroot,
  PREPARE_LIMIT_MS,
  Sandbox,
  singleExecutable,
} from '../support/nonode.js';
import { freePort, waitFor } from '../support/tools.js';
import { rootFlags } from '../support/node-tree.js';
import { OLD_SPACE_MIB, SEMI_SPACE_MIB } from '../../scripts/sea/v8-flags.js';
import { NODE_AGENT_V8_FLAGS } from '../../src/cli/v8-tuning.js';

const EXE = '/opt/slurm-otel/slurm-otel';
const TREE = '/srv/tree';
/** Generous for a loaded machine; nothing asserts how long a stop took. */
const STOP_DEADLINE_MS = 30_000;
/** Each test: a first cycle (waited for up to 30 s) and a stop (up to STOP_DEADLINE_MS), with room. */
const TEST_LIMIT_MS = 120_000;

const PACKAGE_VERSION = (JSON.parse(fs.readFileSync('package.json', 'utf8')) as { version: string }).version;

let box: Sandbox;
let roots: TreeRoots;

describe.runIf(canRunChroot)(
  'the single executable in a Debian chroot without Node',
  { timeout: TEST_LIMIT_MS },
  () => {
    beforeAll(() => {
      const exe = singleExecutable();
      nonodeChroot();
      box = new Sandbox();
      box.put(exe, EXE, 0o755);
      roots = demoTreeIn(box, TREE);
    }, PREPARE_LIMIT_MS);
    afterAll(async () => box?.remove());

    it('the chroot has no node: which node fails, /usr/bin/env node fails', async () => {
      const which = await box.run('/bin/sh', ['-c', 'which node; echo "which=$?"; command -v nodejs; exit 0']);
      expect(which.stdout.trim()).toBe('which=1');
      const env = await box.run('/usr/bin/env', ['node', '--version']);
      expect(env.code).toBe(127);
    });

    it('--help lists the commands; --version is the package version', async () => {
      const help = await box.run(EXE, ['--help']);
      expect(help.stderr).toBe('');
      expect(help.code).toBe(0);
      for (const cmd of ['node', 'cluster', 'demo', 'explain'])
        expect(help.stdout).toMatch(new RegExp(`^  ${cmd} `, 'm'));
      const version = await box.run(EXE, ['--version']);
      expect(version.stdout.trim()).toBe(PACKAGE_VERSION);
    });

    it('NODE_OPTIONS is ignored: no --require, no --inspect, no V8 flag from the environment', async () => {
      // Code a --require would run before the CLI: it leaves a marker.
      fs.writeFileSync(box.host('/srv/preload.js'), "require('fs').writeFileSync('/srv/preloaded', 'ran');\n");
      const required = await box.run(EXE, ['--version'], { NODE_OPTIONS: '--require /srv/preload.js' });
      expect(required.stderr).toBe('');
      expect(required.stdout.trim()).toBe(PACKAGE_VERSION);
      expect(fs.existsSync(box.host('/srv/preloaded'))).toBe(false);
      // The inspector would print where it listens on stderr, before the CLI starts.
      const inspected = await box.run(EXE, ['--version'], { NODE_OPTIONS: '--inspect=127.0.0.1:0' });
      expect(inspected.stderr).toBe('');
      expect(inspected.stdout.trim()).toBe(PACKAGE_VERSION);
      // A 1 MiB old space cannot even hold Node's start-up snapshot: applied, the run dies.
      const squeezed = await box.run(EXE, ['--version'], { NODE_OPTIONS: '--max-old-space-size=1' });
      expect(squeezed.stderr).toBe('');
      expect(squeezed.code).toBe(0);
      // Nor through the command line: --node-options reaches the CLI, never Node.
      await box.run(EXE, ['--node-options=--require /srv/preload.js', '--version']);
      expect(fs.existsSync(box.host('/srv/preloaded'))).toBe(false);
    });

    it('keeps its own V8 heap limits, whatever the machine and NODE_OPTIONS say; the node agent names its V8 flags and reads fd tables with the reader it carries', async () => {
      const [metrics, monitoring] = [await freePort(), await freePort()];
      const agent = box.start(
        EXE,
        [
          'node',
          ...rootFlags(roots),
          ...['--metrics-bind-address', `127.0.0.1:${metrics}`, '--monitoring-bind-address', `127.0.0.1:${monitoring}`],
          ...['--log-format', 'json'],
        ],
        { NODE_OPTIONS: '--max-old-space-size=3000 --max-semi-space-size=64' },
      );
      try {
        const line = await waitFor('the start-up log line', () =>
          agent
            .output()
            .stderr.split('\n')
            .find((l) => l.includes('"node agent started"')),
        );
        const started = JSON.parse(line) as { node: string; heap_limit_mib: number; v8_flags: string };
        expect(started.node).toMatch(/^v24\./);
        expect(started.v8_flags).toBe(NODE_AGENT_V8_FLAGS.join(' '));
        // V8's heap limit: the old generation plus three semi-spaces (two, and new large objects).
        // Without the executable's flags it follows the machine's memory (over 2 GiB here).
        expect(started.heap_limit_mib).toBe(OLD_SPACE_MIB + 3 * SEMI_SPACE_MIB);
        // Its compiled fd reader, loaded from an unnamed file: no Node, no package on disk here.
        const reader = agent
          .output()
          .stderr.split('\n')
          .find((l) => l.includes('"fd_reader"'));
        expect(JSON.parse(reader ?? '{}')).toMatchObject({ level: 'info', fd_reader: 'native' });
      } finally {
        agent.kill('SIGTERM');
      }
      let exit: Awaited<typeof agent.exited> | undefined;
      void agent.exited.then((e) => (exit = e));
      const done = await waitFor('the agent to exit after SIGTERM', () => exit, STOP_DEADLINE_MS);
      expect(done.code, done.stderr).toBe(0);
    });

    it('a serving agent opens no debugger: not from NODE_OPTIONS, not on SIGUSR1', async () => {
      const [metrics, monitoring, inspector] = [await freePort(), await freePort(), await freePort()];
      const agent = box.start(
        EXE,
        [
          'node',
          ...rootFlags(roots),
          '--metrics-bind-address',
          `127.0.0.1:${metrics}`,
          '--monitoring-bind-address',
          `127.0.0.1:${monitoring}`,
        ],
        { NODE_OPTIONS: `--inspect=127.0.0.1:${inspector}` },
      );
      try {
        await waitFor('the agent to serve its first cycle', async () => {
          const res = await fetch(`http://127.0.0.1:${metrics}/metrics`);
          return res.status === 200 && (await res.text()).includes('ib_slurm_port_attribution') ? true : undefined;
        });
        // --inspect listens before the main script runs: by now its port would be open.
        await expect(fetch(`http://127.0.0.1:${inspector}/json/version`)).rejects.toThrow();
        // Node's SIGUSR1 handler starts the inspector; the executable has none (SigCgt's bit 9: signal 10).
        const status = fs.readFileSync(`/proc/${agent.pid}/status`, 'utf8');
        const caught = BigInt(`0x${/^SigCgt:\s*([0-9a-f]+)$/m.exec(status)?.[1] ?? 'x'}`);
        expect(caught & (1n << 9n)).toBe(0n);
        agent.kill('SIGUSR1');
        expect((await fetch(`http://127.0.0.1:${metrics}/metrics`)).status).toBe(200);
      } finally {
        agent.kill('SIGTERM');
      }
      let exit: Awaited<typeof agent.exited> | undefined;
      void agent.exited.then((e) => (exit = e));
      const done = await waitFor('the agent to exit after SIGTERM', () => exit, STOP_DEADLINE_MS);
      expect(done.code, done.stderr).toBe(0);
      expect(done.stderr).not.toMatch(/Debugger listening/);
    });

    it('explain prints the attribution of the synthetic node (table and --json)', async () => {
      const table = await box.run(EXE, ['explain', ...rootFlags(roots)]);
      expect(table.stderr).toBe('');
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/│ mlx5_0 │ 1 .*│ sole /);
      expect(table.stdout).toMatch(/│ mlx5_1 │ 1 .*│ shared /);
      const json = await box.run(EXE, ['explain', '--json', ...rootFlags(roots)]);
      expect(json.code).toBe(0);
      expect(JSON.stringify(JSON.parse(json.stdout))).toContain('918002');
    });

    it('node --once prints the exposition of one cycle and exits 0', async () => {
      const r = await box.run(EXE, ['node', '--once', ...rootFlags(roots), '--log-level', 'error']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^ib_slurm_port_attribution\{device="mlx5_0",port="1",status="sole"\} 1$/m);
      expect(r.stdout).toMatch(/^ib_slurm_job_processes\{job_id="918002"\} 3$/m);
      expect(r.stdout).toMatch(new RegExp(`service_version="${PACKAGE_VERSION.replace(/\./g, '\\.')}"`));
    });

    it('cluster --once reads a fake slurmrestd on loopback', async () => {
      const cluster = new FakeCluster({ nodes: 4, seed: 5 });
      cluster.advance(10 * 60_000);
      const server = await startFakeSlurmrestd({ cluster, versions: ['v0.0.44'], host: '127.0.0.1', port: 0 });
      try {
        const r = await box.run(EXE, ['cluster', '--once', '--log-level', 'error', '--token-source', 'none'], {
          SLURM_EXPORTER_CLUSTER_NAME: cluster.clusterName,
          SLURM_EXPORTER_SLURM_API_SERVER: server.url,
        });
        expect(r.code, r.stderr).toBe(0);
        expect(select(parseExposition(r.stdout), 'slurm_node_info').length).toBe(4);
      } finally {
        await server.close();
      }
    });

    it('demo runs both agents, its stand-in rdma tool too (a shell script: no Node needed)', async () => {
      const ports = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
      const [metrics, monitoring, clusterMetrics, clusterMonitoring] = ports.map((p) => `127.0.0.1:${p}`);
      const demo = box.start(EXE, [
        'demo',
        '--metrics-bind-address',
        metrics as string,
        '--monitoring-bind-address',
        monitoring as string,
        '--cluster-metrics-bind-address',
        clusterMetrics as string,
        '--cluster-monitoring-bind-address',
        clusterMonitoring as string,
        '--log-level',
        'warn',
      ]);
      try {
        // The shared port's per-job bytes come from QP counters, which only the rdma tool gives.
        const body = await waitFor('the demo to count QP bytes of a job on the shared port', async () => {
          const text = await (await fetch(`http://${metrics}/metrics`)).text();
          return /^ib_slurm_job_qp_transmit_bytes_total\{job_id="918002",device="mlx5_1",port="1"\} [1-9]/m.test(text)
            ? text
            : undefined;
        });
        expect(body).toMatch(/^ib_slurm_port_attribution\{device="mlx5_1",port="1",status="shared"\} 1$/m);
        const cluster = await (await fetch(`http://${clusterMetrics}/metrics`)).text();
        expect(cluster).toMatch(/^slurm_node_info\{/m);
      } finally {
        demo.kill('SIGTERM');
        await demo.exited;
      }
      const exit = await demo.exited;
      expect(exit.stderr).not.toMatch(/rdma run failed/);
      expect(exit.code, exit.stderr).toBe(0);
    });

    it('serves /metrics behind basic auth, then stops on SIGTERM with status 0', async () => {
      fs.writeFileSync(box.host('/srv/web.yml'), `basic_auth_users:\n  prom: ${bcrypt.hashSync('s3cret', 4)}\n`);
      const [metrics, monitoring] = [await freePort(), await freePort()];
      const agent = box.start(EXE, [
        'node',
        ...rootFlags(roots),
        '--web-config-file',
        '/srv/web.yml',
        '--metrics-bind-address',
        `127.0.0.1:${metrics}`,
        '--monitoring-bind-address',
        `127.0.0.1:${monitoring}`,
        '--log-format',
        'plain',
      ]);
      const url = `http://127.0.0.1:${metrics}/metrics`;
      const auth = (password: string) => ({
        authorization: `Basic ${Buffer.from(`prom:${password}`).toString('base64')}`,
      });
      const body = await waitFor('the agent to serve its first cycle', async () => {
        const res = await fetch(url, { headers: auth('s3cret') });
        const text = await res.text();
        return res.status === 200 && text.includes('ib_slurm_port_attribution') ? text : undefined;
      });
      expect(body).toMatch(/^ib_slurm_job_processes\{job_id="918002"\} 3$/m);
      expect((await fetch(url, { headers: auth('wrong') })).status).toBe(401);
      expect((await fetch(url)).status).toBe(401);

      agent.kill('SIGTERM');
      let exit: Awaited<typeof agent.exited> | undefined;
      void agent.exited.then((e) => (exit = e));
      const done = await waitFor('the agent to exit after SIGTERM', () => exit, STOP_DEADLINE_MS);
      expect(done.code, done.stderr).toBe(0);
      expect(done.stderr).toMatch(/stopped/);
    });
  },
);
