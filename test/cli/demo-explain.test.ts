/**
 * `slurm-otel explain` on the demo's tree, with the arguments the demo prints, gives the statuses
 * its node agent's landing page shows, run as an ordinary user (no device nodes, no mknod: the
 * demo's device table says what its fd links are). Without that table, explain names each device
 * path the tree's fds hold that this host lacks, and reports no port as idle or sole.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfCommand, shellWord } from '../../src/cli/demo-explain.js';
import { startDemo, type DemoStack } from '../../src/cli/demo-stack.js';
import { DEMO_NODE } from '../../src/demo/scenarios.js';
import { nodeAgentOptions } from '../support/agents.js';
import { BIN } from '../support/node-tree.js';

let demo: DemoStack;

beforeAll(async () => {
  // startDemo replaces these roots with its synthetic tree.
  const unused = { sysfs: '/nonexistent', procfs: '/nonexistent', cgroupfs: '/nonexistent' };
  demo = await startDemo({
    node: nodeAgentOptions(unused, {
      resource: { serviceName: 'slurm-otel-node', serviceVersion: 'test', hostName: DEMO_NODE },
    }),
    layout: 'v2-sluid',
    // A storage client outside Slurm on mlx5_3: every status the demo can show (sole, shared, nonjob).
    nonJobHolder: true,
    tickMs: 1_000,
  });
  // Readable by the ordinary user explain runs as below.
  fs.chmodSync(demo.dir, 0o755);
}, 60_000);

afterAll(async () => {
  await demo?.stop();
});

/** explain as an ordinary user: as root, dropped to nobody (no capability, no mknod). */
function explainAsUser(args: readonly string[]): SpawnSyncReturns<string> {
  const asUser =
    process.getuid?.() === 0 ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', process.execPath] : [];
  const [cmd, ...rest] = asUser.length > 0 ? asUser : [process.execPath];
  return spawnSync(cmd as string, [...rest, BIN, 'explain', ...args], { encoding: 'utf8', timeout: 60_000 });
}

/** device/port (or GPU) → status, from the landing page's rows. */
async function landingStatuses(): Promise<{ ports: Record<string, string>; gpus: Record<string, string> }> {
  const html = await (await fetch(`${demo.node.metricsUrl}/`)).text();
  const ports = [...html.matchAll(/data-device="([^"]+)" data-port="([^"]+)" data-status="([^"]+)"/g)];
  const gpus = [...html.matchAll(/data-unit="([^"]+)" data-status="([^"]+)"/g)];
  return {
    ports: Object.fromEntries(ports.map((m) => [`${m[1]}/${m[2]}`, m[3] as string])),
    gpus: Object.fromEntries(gpus.map((m) => [m[1] as string, m[2] as string])),
  };
}

describe("explain on the demo's tree", () => {
  it('gives the landing page statuses of every port and GPU, as an ordinary user', async () => {
    const landing = await landingStatuses();
    expect(Object.values(landing.ports).sort()).toEqual(['nonjob', 'shared', 'sole', 'sole']);
    expect(Object.keys(landing.gpus).length).toBeGreaterThan(0);
    const run = explainAsUser([...demo.explainArgs, '--json']);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const out = JSON.parse(run.stdout) as {
      ports: { device: string; port: string | number; status: string }[];
      gpus: { device: string; status: string }[];
    };
    expect(Object.fromEntries(out.ports.map((p) => [`${p.device}/${p.port}`, p.status]))).toEqual(landing.ports);
    expect(Object.fromEntries(out.gpus.map((g) => [g.device, g.status]))).toEqual(landing.gpus);
  });

  it('names the roots and the device table in the arguments the demo prints', () => {
    const arg = (flag: string): string | undefined => demo.explainArgs[demo.explainArgs.indexOf(flag) + 1];
    expect(arg('--sysfs-root')).toBe(path.join(demo.dir, 'sys'));
    expect(arg('--procfs-root')).toBe(path.join(demo.dir, 'proc'));
    expect(arg('--cgroup-root')).toBe(path.join(demo.dir, 'cgroup'));
    expect(fs.readFileSync(arg('--device-table') as string, 'utf8')).toMatch(/^231:\d+ \/dev\/infiniband\/uverbs0$/m);
  });

  it('without the device table, warns of each device path this host lacks and calls no port idle or sole', () => {
    const table = demo.explainArgs.indexOf('--device-table');
    const args = demo.explainArgs.filter((_, i) => i !== table && i !== table + 1);
    const run = explainAsUser(args);
    expect(run.status).toBe(0);
    // The job processes' uverbs links; a host that has one of these paths knows what it is.
    const held = ['/dev/infiniband/uverbs0', '/dev/infiniband/uverbs2', '/dev/infiniband/uverbs3'];
    const lacking = held.filter((p) => !fs.existsSync(p));
    for (const p of lacking) expect(run.stdout).toMatch(new RegExp(`^warning: ${p} does not exist on this host`, 'm'));
    if (lacking.length === held.length) {
      const statuses = [...run.stdout.matchAll(/│ (mlx5_\d) +│ 1 +│[^\n]*?│ (\w+) +│/g)].map((m) => m[2]);
      expect(statuses).toHaveLength(4);
      expect(statuses.filter((s) => s === 'idle' || s === 'sole')).toEqual([]);
    }
  });

  it('refuses a device table it cannot read or parse: exit 2, naming the file and line', () => {
    const bad = path.join(demo.dir, 'bad-table');
    fs.writeFileSync(bad, '231:192 /dev/infiniband/uverbs0\nuverbs1\n');
    for (const [file, want] of [
      [bad, `--device-table ${bad} line 2: expected "major:minor /path"`],
      [path.join(demo.dir, 'none'), `--device-table ${path.join(demo.dir, 'none')} cannot be read (ENOENT)`],
    ]) {
      const run = spawnSync(process.execPath, [BIN, 'explain', '--device-table', file as string], { encoding: 'utf8' });
      expect(run.status).toBe(2);
      expect(run.stderr).toContain(want);
    }
  });
});

describe('the command line the demo prints', () => {
  it('runs this command again: node and the script (relative below the working directory), or the executable', () => {
    expect(selfCommand(['node', '/r/dist/src/cli/main.js', 'demo'], '/usr/bin/node', '/r')).toBe(
      'node dist/src/cli/main.js',
    );
    expect(selfCommand(['node', '/r/dist/src/cli/main.js'], '/usr/bin/node', '/else')).toBe(
      'node /r/dist/src/cli/main.js',
    );
    expect(selfCommand(['/opt/slurm-otel', '/opt/slurm-otel', 'demo'], '/opt/slurm-otel', '/r')).toBe(
      '/opt/slurm-otel',
    );
  });

  it('quotes a word the shell would split or expand', () => {
    expect(shellWord('/tmp/slurm-otel-demo-x1/sys')).toBe('/tmp/slurm-otel-demo-x1/sys');
    expect(shellWord("/tmp/it's here/$HOME")).toBe(`'/tmp/it'\\''s here/$HOME'`);
    const echoed = spawnSync('sh', ['-c', `printf %s ${shellWord("/tmp/it's here/$HOME")}`], { encoding: 'utf8' });
    expect(echoed.stdout).toBe("/tmp/it's here/$HOME");
  });
});
