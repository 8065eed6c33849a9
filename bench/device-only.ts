/**
 * Device-only cycle benchmark: the heavy node's 8 HCAs × 2 ports with no process at all, the node
 * agent's cycle beside node_exporter's infiniband collector on the same sysfs tree (when
 * node_exporter is installed: `prometheus-node-exporter` or `node_exporter` on PATH).
 *   device-only cycle (median of a warm collector) vs node_exporter's
 *   node_scrape_collector_duration_seconds{collector="infiniband"} (median of its scrapes)
 * Goal: device-only ≤ 1.0× node_exporter.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { HOLD_COUNTER_FILES, NodeCollector } from '../src/node/collect.js';
import { writeTree } from '../src/demo/nodetree.js';
import { HEAVY_NODE, heavyTree } from './heavy-node.js';
import { asNodeAgent, median, sayRuntime, time } from './stats.js';

const RUNS = 50;

function nodeExporter(): string | undefined {
  for (const name of ['prometheus-node-exporter', 'node_exporter']) {
    const r = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
    if (r.status === 0 && r.stdout.trim() !== '') return r.stdout.trim();
  }
  return undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

interface NodeExporter {
  /** One scrape: its infiniband collector duration and the scrape's own time, ms. */
  scrape(): Promise<{ collector: number; scrape: number }>;
  stop(): void;
}

/** node_exporter with only its infiniband collector, on `sysfs`, on loopback. */
async function startNodeExporter(bin: string, sysfs: string, procfs: string): Promise<NodeExporter> {
  const port = await freePort();
  const child = spawn(
    bin,
    [
      `--path.sysfs=${sysfs}`,
      `--path.procfs=${procfs}`,
      '--collector.disable-defaults',
      '--collector.infiniband',
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = `http://127.0.0.1:${port}/metrics`;
  for (let i = 0; ; i++) {
    if ((await fetch(url).catch(() => undefined))?.ok) break;
    if (i > 200) {
      child.kill('SIGTERM');
      throw new Error(`node_exporter did not serve ${url}: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    async scrape() {
      const t0 = performance.now();
      const text = await (await fetch(url)).text();
      const scrape = performance.now() - t0;
      const m = /^node_scrape_collector_duration_seconds\{collector="infiniband"\} (\S+)$/m.exec(text);
      if (!m) throw new Error('no infiniband collector duration in the scrape');
      if (!/^node_infiniband_port_data_transmitted_bytes_total/m.test(text))
        throw new Error('node_exporter read no InfiniBand port from the tree');
      return { collector: Number(m[1]) * 1000, scrape };
    },
    stop: () => child.kill('SIGTERM'),
  };
}

asNodeAgent();
sayRuntime();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-bench-devices-'));
try {
  const spec = heavyTree({ ...HEAVY_NODE, jobs: 0, jobProcesses: 0, otherProcesses: 0 });
  const roots = writeTree(dir, spec);
  fs.mkdirSync(roots.procfs, { recursive: true });
  const cold = median(
    Array.from({ length: 9 }, () => time(() => new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(0))),
  );
  // As the running agent does: counter files kept open.
  const warm = new NodeCollector({ roots, fdRescanIntervalMs: 60_000, holdCounterFiles: HOLD_COUNTER_FILES });
  const first = warm.cycle(0);
  const points = first.families.reduce((n, f) => n + f.points.length, 0);
  const unheld = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 });
  unheld.cycle(0);
  const bin = nodeExporter();
  const ne = bin === undefined ? undefined : await startNodeExporter(bin, roots.sysfs, roots.procfs);
  // Interleaved, so a machine busy with something else weighs on each alike.
  const held: number[] = [];
  const opened: number[] = [];
  const neCollector: number[] = [];
  const neScrape: number[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      held.push(time(() => warm.cycle(1000 * (i + 1))));
      opened.push(time(() => unheld.cycle(1000 * (i + 1))));
      const s = await ne?.scrape();
      if (s) {
        neCollector.push(s.collector);
        neScrape.push(s.scrape);
      }
    }
  } finally {
    ne?.stop();
    warm.close();
  }
  const steady = median(held);
  console.log(`tree: ${HEAVY_NODE.hcas} HCAs × ${HEAVY_NODE.portsPerHca} ports, no processes; points: ${points}`);
  console.log(
    `device-only cycle: cold ${cold.toFixed(2)} ms, steady ${steady.toFixed(2)} ms (counter files opened each cycle: ${median(opened).toFixed(2)} ms)`,
  );
  if (ne === undefined) console.log('node_exporter: not installed (apt-get install prometheus-node-exporter)');
  else {
    const c = median(neCollector);
    console.log(
      `node_exporter infiniband collector: ${c.toFixed(2)} ms (whole scrape ${median(neScrape).toFixed(2)} ms)   ratio ${(steady / c).toFixed(2)}×  (goal ≤ 1.00×)`,
    );
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
