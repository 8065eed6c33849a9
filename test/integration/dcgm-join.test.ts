/**
 * The DCGM join of docs/node-agent.md, run as written there on a real Prometheus that holds DCGM
 * exporter's series as its repository recorded them (fixtures/dcgm) and a real node agent's
 * holder series for the same GPUs (stand-ins carrying the recorded UUIDs and bus ids).
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeAgent } from '../../src/node/agent.js';
import { demoTree } from '../../src/demo/scenarios.js';
import { migCapsMinor, nvidiaDevices, writeTree, type LinkSpec, type TreeSpec } from '../../src/demo/nodetree.js';
import { startTestNodeAgent } from '../support/agents.js';
import { dcgmExposition, recordedGpus, serveExposition } from '../support/dcgm.js';
import { startPrometheus, type PrometheusServer } from '../support/prometheus.js';
import { tmpDir } from '../support/tmp.js';
import { findTool, shouldRun, toolPath } from '../support/tools.js';

const prometheus = findTool('prometheus', 'prometheus');
const DOC = fileURLToPath(new URL('../../docs/node-agent.md', import.meta.url));

/** The first promql block of the docs' DCGM join section, comments dropped. */
function documentedJoin(): string {
  const doc = fs.readFileSync(DOC, 'utf8');
  const section = doc.slice(doc.indexOf("### Joining DCGM exporter's series"));
  const block = /```promql\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('no promql block in the DCGM join section of docs/node-agent.md');
  return block
    .split('\n')
    .filter((l) => !l.trimStart().startsWith('#'))
    .join('\n');
}

const GPUS = recordedGpus();
const NVIDIA = { gpus: GPUS };
const DEVICES = nvidiaDevices(NVIDIA);
const uuidOf = (minor: number): string => (GPUS.find((g) => g.minor === minor) as (typeof GPUS)[number]).uuid;
const on = (...targets: string[]): LinkSpec[] => targets.map((target) => ({ target, dev: DEVICES.get(target) }));
const CUDA = ['/dev/nvidiactl', '/dev/nvidia-uvm', '/dev/nvidia-caps/nvidia-cap1', '/dev/nvidia-caps/nvidia-cap2'];
const cap = (minor: number, gi: number, ci?: number): string =>
  `/dev/nvidia-caps/nvidia-cap${migCapsMinor(minor, gi, ci)}`;

/**
 * The demo node's four jobs on the recorded GPUs: 918001 alone on GPU 1, 918002 and 918003 both
 * on GPU 2 (shared), 918004 alone on compute instance 0 of GPU 0's MIG GPU instance 11.
 */
function tree(): TreeSpec {
  const spec = demoTree({ layout: 'v2', nonJobHolder: false });
  const held: string[][] = [
    ['/dev/nvidia1'],
    ['/dev/nvidia2'],
    ['/dev/nvidia2'],
    ['/dev/nvidia0', cap(0, 11), cap(0, 11, 0)],
  ];
  const jobs = spec.jobs.map((j, i) => {
    const step = j.steps[0] as (typeof j.steps)[number];
    const [first, ...rest] = step.tasks;
    const task = { ...(first as (typeof step.tasks)[number]), links: on(...(held[i] ?? []), ...CUDA) };
    return { ...j, steps: [{ ...step, tasks: [task, ...rest] }] };
  });
  return { ...spec, jobs, nvidia: NVIDIA };
}

type Row = { metric: Record<string, string>; value: [number, string] };
/** Per row: scrape job, UUID, GPU instance and job id, sorted. */
const joined = (rows: readonly Row[]): string[][] =>
  rows
    .map((r) => [r.metric.job ?? '', r.metric.UUID ?? '', r.metric.GPU_I_ID ?? '', r.metric.job_id ?? ''])
    .sort((a, b) => a.join().localeCompare(b.join()));

describe.runIf(shouldRun(prometheus))(
  'DCGM exporter series joined to the node agent on a real Prometheus',
  { timeout: 120_000 },
  () => {
    let agent: NodeAgent;
    let prom: PrometheusServer;
    const servers: { close: () => Promise<void> }[] = [];

    beforeAll(async () => {
      const dir = tmpDir('slurm-otel-dcgm-');
      agent = await startTestNodeAgent(writeTree(dir + '/tree', tree()), { collectionIntervalMs: 1000 });
      // Released versions name the host `Hostname`, main `hostname` (here fully qualified, as
      // os.Hostname() may give it); a second host reports the same GPUs, to show the host is matched.
      const released = await serveExposition(dcgmExposition('Hostname', 'gpu-001'));
      const main = await serveExposition(dcgmExposition('hostname', 'gpu-001.cluster.internal'));
      const other = await serveExposition(dcgmExposition('Hostname', 'gpu-002'));
      servers.push(released, main, other);
      prom = await startPrometheus(toolPath(prometheus), dir, {
        // As otel-config/prometheus.yml labels it: instance = the Slurm node name.
        'slurm-otel-node': [{ target: new URL(agent.metricsUrl).host, labels: { instance: 'gpu-001' } }],
        'dcgm-released': [released.target],
        'dcgm-main': [main.target],
        'dcgm-other-host': [other.target],
      });
      // Both sides whole before the join is asked: 9 recorded series per exporter, 4 holders.
      await prom.waitFor('count(DCGM_FI_DEV_FB_USED) == 27');
      await prom.waitFor('count(ib_slurm_job_gpu_holder) == 4');
    });

    afterAll(async () => {
      await prom?.stop();
      await agent?.stop();
      for (const s of servers) await s.close();
    });

    it('puts each sole holder’s job on its own GPU’s series, in both host label conventions', async () => {
      const rows = await prom.query(documentedJoin());
      const gi11 = uuidOf(0);
      expect(joined(rows)).toEqual(
        [
          ['dcgm-main', gi11, '11', '918004'],
          ['dcgm-main', uuidOf(1), '', '918001'],
          ['dcgm-released', gi11, '11', '918004'],
          ['dcgm-released', uuidOf(1), '', '918001'],
        ].sort((a, b) => a.join().localeCompare(b.join())),
      );
      // The value is DCGM's own (framebuffer MiB used, as recorded).
      const recorded = await prom.query(`DCGM_FI_DEV_FB_USED{job="dcgm-released",GPU_I_ID="11"}`);
      const got = rows.find((r) => r.metric.job === 'dcgm-released' && r.metric.GPU_I_ID === '11');
      expect(got?.value[1]).toBe(recorded[0]?.value[1]);
    });

    it('gives a shared GPU no job, though both its jobs hold it (holder 0)', async () => {
      const shared = await prom.query(`ib_slurm_job_gpu_holder{UUID="${uuidOf(2)}"}`);
      expect(shared.map((r) => [r.metric.job_id, r.value[1]]).sort()).toEqual([
        ['918002', '0'],
        ['918003', '0'],
      ]);
      const rows = await prom.query(documentedJoin());
      expect(rows.filter((r) => r.metric.UUID === uuidOf(2))).toEqual([]);
      // Nor the other GPU instance of the MIG GPU, whose compute instances nobody holds.
      expect(rows.filter((r) => r.metric.GPU_I_ID === '13')).toEqual([]);
    });

    it('matches the host: the same GPUs reported by another host get no job', async () => {
      const rows = await prom.query(documentedJoin());
      expect(rows.filter((r) => r.metric.job === 'dcgm-other-host')).toEqual([]);
      // Without the host in the key the other host's series would take gpu-001's jobs.
      const byUuidOnly = await prom.query(
        'DCGM_FI_DEV_FB_USED{job="dcgm-other-host"} * on (UUID, GPU_I_ID) group_left (job_id) max by (UUID, GPU_I_ID, job_id) (ib_slurm_job_gpu_holder == 1)',
      );
      expect(byUuidOnly.map((r) => r.metric.job_id).sort()).toEqual(['918001', '918004']);
    });
  },
);
