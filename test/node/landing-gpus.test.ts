import { describe, expect, it } from 'vitest';
import { demoTree } from '../../src/demo/scenarios.js';
import {
  migCapsMinor,
  nvidiaDevices,
  standInGpus,
  writeTree,
  type LinkSpec,
  type ProcSpec,
  type TreeSpec,
} from '../../src/demo/nodetree.js';
import { NodeCollector } from '../../src/node/collect.js';
import { gpuSection } from '../../src/node/landing-gpus.js';
import { renderLanding } from '../../src/node/landing.js';
import { startTestNodeAgent } from '../support/agents.js';
import { tmpDir } from '../support/tmp.js';

const GPUS = standInGpus(4);
/** GPU 3 runs MIG: GPU instance 1 with compute instance 0. */
const NVIDIA = { gpus: [...GPUS.slice(0, 3), { ...(GPUS[3] as (typeof GPUS)[number]), mig: [{ gi: 1, cis: [0] }] }] };
const DEVICES = nvidiaDevices(NVIDIA);
const on = (...targets: string[]): LinkSpec[] => targets.map((target) => ({ target, dev: DEVICES.get(target) }));
const CAP = (gi: number, ci?: number) => `/dev/nvidia-caps/nvidia-cap${migCapsMinor(3, gi, ci)}`;

/** 918001 alone on GPU 0, 918002 and 918003 on GPU 1, a daemon on GPU 2, 918004 on GPU 3's MIG instance. */
function gpuTree(): TreeSpec {
  const spec = demoTree({ layout: 'v2-sluid', nonJobHolder: false });
  const held: string[][] = [['/dev/nvidia0'], ['/dev/nvidia1'], ['/dev/nvidia1'], ['/dev/nvidia3', CAP(1), CAP(1, 0)]];
  const jobs = spec.jobs.map((j, i) => {
    const step = j.steps[0] as (typeof j.steps)[number];
    const [first, ...rest] = step.tasks;
    const task: ProcSpec = { ...(first as ProcSpec), links: on(...(held[i] ?? []), '/dev/nvidiactl') };
    return { ...j, steps: [{ ...step, tasks: [task, ...rest] }] };
  });
  const others: ProcSpec[] = [...spec.others, { pid: 960, comm: 'nv-hostengine', links: on('/dev/nvidia2') }];
  return { ...spec, jobs, others, nvidia: NVIDIA };
}

/** Each GPU row of the page: unit, status, the jobs cell's text, the non-job cell's text, the why. */
function gpuTable(html: string): string[][] {
  const table = /<table id="gpus">([\s\S]*?)<\/table>/.exec(html)?.[1] ?? '';
  return [
    ...table.matchAll(/<tr class="[^"]*" data-gpu="[^"]*" data-unit="([^"]*)" data-status="([^"]*)">(.*?)<\/tr>/g),
  ].map((m) => {
    const cells = [...(m[3] as string).matchAll(/<td>(.*?)<\/td>/g)].map((c) =>
      (c[1] as string)
        .replace(/<[^>]+>/g, ' ')
        .replace(/\s+/g, ' ')
        .trim(),
    );
    return [m[1] as string, m[2] as string, cells[2] as string, cells[3] as string, cells[5] as string];
  });
}

const meta = { host: 'gpu-001', version: 't', atMs: 0, refreshSeconds: 15, gaps: [] };

describe('the landing page’s GPUs', () => {
  it('shows each GPU unit beside the ports with its status, holders (jobs with PIDs, non-job processes) and why', async () => {
    const roots = writeTree(tmpDir(), gpuTree());
    const agent = await startTestNodeAgent(roots);
    try {
      await agent.cycleNow();
      const html = await (await fetch(agent.metricsUrl + '/')).text();
      expect(html.indexOf('id="gpus"')).toBeGreaterThan(html.indexOf('id="ports"'));
      // The why of each unit, as the attribution (and explain) gives it.
      const why = gpuSection(new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle()).rows.map((r) => r.why);
      expect(why.every((w) => w.length > 0)).toBe(true);
      expect(gpuTable(html)).toEqual([
        ['nvidia0', 'sole', '918001: 41010 python', '—', why[0]],
        ['nvidia1', 'shared', '918002: 42010 python 918003: 43010 python', '—', why[1]],
        ['nvidia2', 'nonjob', '—', '960 nv-hostengine', why[2]],
        ['nvidia3 (gi 1 ci 0)', 'sole', '918004: 44010 python', '—', why[3]],
      ]);
      // The ids a DCGM series carries.
      expect(html).toContain(GPUS[0]?.uuid);
      expect(html).toContain('00000000:18:00.0');
      expect(html).not.toContain('id="no-gpus"');
    } finally {
      await agent.stop();
    }
  });

  it('says in one line why a node has no GPU', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle();
    const section = gpuSection(c);
    expect(section.present).toBe(false);
    const html = renderLanding([], { ...meta, gpus: section });
    expect(html).toMatch(/<p id="no-gpus">No GPUs: [^<]*driver[^<]*<\/p>/);
    expect(html).not.toContain('id="gpus"');
  });

  it('escapes what it shows', () => {
    const roots = writeTree(tmpDir(), gpuTree());
    const section = gpuSection(new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle());
    const row = section.rows[0] as (typeof section.rows)[number];
    const html = renderLanding([], {
      ...meta,
      gpus: { ...section, rows: [{ ...row, why: '<script>x</script>', nonJob: [{ pid: 1, comm: '<i>evil' }] }] },
    });
    expect(html).not.toContain('<script>x');
    expect(html).not.toContain('<i>evil');
    expect(html).toContain('&#60;script&#62;');
  });
});
