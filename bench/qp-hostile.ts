/**
 * Hostile `rdma` readings against the node agent (--qp-counters observe, a stand-in rdma
 * answering from files). Each case runs in a fresh process: the agent cycles until the reading
 * was taken and the next asked for, then /metrics is scraped once. Prints per case: peak RSS,
 * the scrape's latency, the longest event-loop stall, series on /metrics, the rdma errors and
 * dropped items counted on the monitoring endpoint.
 * Cases: 1e6 counter entries; 100k counter names; 10k device names; a 150 KB unterminated string
 * followed by digits; a realistic 250k QPs (512 counters, 250k `resource show qp` entries).
 * Goal: the node agent near 120 MB RSS, no stall over 100 ms, series bounded.
 * Usage: node dist/bench/qp-hostile.js [case …]
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startNodeAgent } from '../src/node/agent.js';
import { RecordingRdma } from '../test/support/recording-rdma.js';
import { demoTree } from '../src/demo/scenarios.js';
import { writeTree } from '../src/demo/nodetree.js';
import { silentLogger } from '../test/support/log.js';
import { sayRuntime } from './stats.js';

const Q_NAMES = ['rx_write_requests', 'rx_read_requests', 'out_of_sequence', 'packet_seq_err', 'np_cnp_sent'];
const PIDS = [42010, 42011, 43010];

type Files = { stat: string; resource?: string };

/** Writes `[` + each part + `]` to a file without building the whole text in memory. */
function writeArray(file: string, n: number, entry: (i: number) => string): void {
  const fd = fs.openSync(file, 'w');
  const batch: string[] = [];
  for (let i = 0; i < n; i++) {
    batch.push((i === 0 ? '[' : ',') + entry(i));
    if (batch.length === 10_000) fs.writeSync(fd, batch.splice(0).join(''));
  }
  fs.writeSync(fd, batch.join('') + (n === 0 ? '[]' : ']'));
  fs.closeSync(fd);
}

const counters = (names: readonly string[], v: number): string => names.map((n) => `"${n}":${v}`).join(',');

const CASES: Record<string, (dir: string) => Files> = {
  entries1e6: (dir) => {
    writeArray(
      path.join(dir, 'stat'),
      1_000_000,
      (i) => `{"ifname":"mlx5_1","port":1,"cntn":${i},"pid":${PIDS[i % 3]},"x":1}`,
    );
    return { stat: 'stat' };
  },
  names100k: (dir) => {
    const names = Array.from({ length: 100_000 }, (_, i) => `c${i}`);
    fs.writeFileSync(
      path.join(dir, 'stat'),
      `[{"ifname":"mlx5_1","port":1,"cntn":1,"pid":42010,${counters(names, 1)},"lqpn":[1]}]`,
    );
    return { stat: 'stat' };
  },
  devices10k: (dir) => {
    writeArray(
      path.join(dir, 'stat'),
      10_000,
      (i) => `{"ifname":"dev${i}","port":1,"cntn":1,"pid":42010,${counters(Q_NAMES, i)},"lqpn":[${i}]}`,
    );
    return { stat: 'stat' };
  },
  unterminated150k: (dir) => {
    // Escaped quotes: each is where a string could start, and runs to the end.
    fs.writeFileSync(path.join(dir, 'stat'), `[{"comm":"${'\\"'.repeat(75_000)}12345678901234567890`);
    return { stat: 'stat' };
  },
  realistic250k: (dir) => {
    const all = [...Q_NAMES, 'rx_atomic_requests', 'duplicate_request', 'rnr_nak_retry_err', 'rdma_tx_bytes'];
    writeArray(path.join(dir, 'stat'), 512, (i) => {
      const qpns = Array.from({ length: 488 }, (_, k) => i * 488 + k);
      return `{"ifindex":2,"ifname":"mlx5_1","port":1,"cntn":${i + 1},"qp-type":"RC","pid":${PIDS[i % 3]},"comm":"python",${counters(all, i * 1000)},"lqpn":[${qpns.join(',')}]}`;
    });
    writeArray(
      path.join(dir, 'resource'),
      250_000,
      (i) =>
        `{"ifindex":2,"ifname":"mlx5_1","port":1,"lqpn":${i},"rqpn":${i + 7},"type":"RC","state":"RTS","rq-psn":1234567,"sq-psn":7654321,"path-mig-state":"MIGRATED","pdn":3,"pid":${PIDS[i % 3]},"comm":"python"}`,
    );
    return { stat: 'stat', resource: 'resource' };
  },
};

interface Figures {
  case: string;
  inputMB: number;
  rssMB: number;
  scrapeMs: number;
  maxStallMs: number;
  series: number;
  rdmaErrors: string;
  dropped: string;
}

async function runCase(name: string, dir: string): Promise<Figures> {
  fs.mkdirSync(path.join(dir, 'rdma'));
  const rdma = new RecordingRdma(path.join(dir, 'rdma'));
  const files = JSON.parse(fs.readFileSync(path.join(dir, 'files.json'), 'utf8')) as Files;
  fs.renameSync(path.join(dir, files.stat), path.join(rdma.dir, 'stat.json'));
  if (files.resource) fs.renameSync(path.join(dir, files.resource), path.join(rdma.dir, 'resource.json'));
  const inputMB = [path.join(rdma.dir, 'stat.json'), path.join(rdma.dir, 'resource.json')]
    .filter((f) => fs.existsSync(f))
    .reduce((n, f) => n + fs.statSync(f).size / 1e6, 0);
  const roots = writeTree(path.join(dir, 'tree'), demoTree({ layout: 'v2', nonJobHolder: false }));
  const stall = monitorEventLoopDelay({ resolution: 5 });
  stall.enable();
  const agent = await startNodeAgent({
    collector: { roots, fdRescanIntervalMs: 60_000 },
    collectionIntervalMs: 3_600_000,
    metrics: { host: '127.0.0.1', port: 0 },
    monitoring: { host: '127.0.0.1', port: 0 },
    resource: { serviceName: 'slurm-otel-node', serviceVersion: 'bench', hostName: 'node1' },
    logger: silentLogger(),
    qpCounters: { path: rdma.path, mode: 'observe', timeoutMs: 120_000 },
  });
  const shows = (): number => rdma.calls().filter((l) => l === '-j statistic qp show').length;
  for (let i = 0; i < 1200 && shows() < 2; i++) {
    await agent.cycleNow();
    await new Promise((r) => setTimeout(r, 100));
  }
  await agent.cycleNow();
  const t0 = performance.now();
  const text = await (await fetch(`${agent.metricsUrl}/metrics`)).text();
  const scrapeMs = performance.now() - t0;
  const self = await (await fetch(`${agent.monitoringUrl}/metrics`)).text();
  stall.disable();
  await agent.stop();
  const pick = (re: RegExp): string =>
    self
      .split('\n')
      .filter((l) => re.test(l))
      .map((l) => l.replace(/^ib_slurm_exporter_/, ''))
      .join(' ');
  return {
    case: name,
    inputMB: Math.round(inputMB * 10) / 10,
    rssMB: Math.round(process.resourceUsage().maxRSS / 1024),
    scrapeMs: Math.round(scrapeMs),
    maxStallMs: Math.round(stall.max / 1e6),
    series: text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length,
    rdmaErrors: pick(/^ib_slurm_exporter_cycle_errors_total\{[^}]*rdma/),
    dropped: pick(/^ib_slurm_exporter_qp_reading_dropped/),
  };
}

async function main(): Promise<void> {
  const [first, second] = process.argv.slice(2);
  if (first === '--child' && second !== undefined) {
    const dir = process.argv[4] as string;
    process.stdout.write(JSON.stringify(await runCase(second, dir)) + '\n');
    return;
  }
  const names = process.argv.length > 2 ? process.argv.slice(2) : Object.keys(CASES);
  for (const name of names) {
    const make = CASES[name];
    if (!make) throw new Error(`unknown case ${name}; cases: ${Object.keys(CASES).join(' ')}`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qp-hostile-'));
    try {
      fs.writeFileSync(path.join(dir, 'files.json'), JSON.stringify(make(dir)));
      const out = execFileSync(process.execPath, [process.argv[1] as string, '--child', name, dir], {
        encoding: 'utf8',
        maxBuffer: 1 << 20,
      });
      process.stdout.write(out);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
}

sayRuntime();
void main();
