import { describe, expect, it } from 'vitest';
import { NodeCollector } from '../../src/node/collect.js';
import { attributionRows, holderText, type NonJobHolder } from '../../src/node/explain.js';
import { renderTable } from '../../src/cli/explain.js';
import { renderLanding } from '../../src/node/landing.js';
import { CounterDrift, demoTree } from '../../src/demo/scenarios.js';
import { uverbsDevice, writeTree } from '../../src/demo/nodetree.js';
import { tmpDir } from '../support/tmp.js';
import { canMakeDeviceNodes, explainCli, renameProcess, withGpuHolder } from '../support/node-tree.js';

function demoRoots(nonJobHolder = true) {
  const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder }));
  new CounterDrift(roots.sysfs).tick(2);
  return roots;
}

describe('attribution rows', () => {
  it('name every holder, job or not, with the reason for the status', () => {
    const rows = attributionRows(new NodeCollector({ roots: demoRoots(), fdRescanIntervalMs: 60_000 }).cycle());
    const shared = rows.find((r) => r.device === 'mlx5_1');
    expect(shared?.status).toBe('shared');
    expect(shared?.jobs.map((j) => [j.jobId, j.holders.map((h) => `${h.pid} ${h.comm}`)])).toEqual([
      ['918002', ['42010 python', '42011 python']],
      ['918003', ['43010 python', '43011 python']],
    ]);
    expect(Number(shared?.counters.packet_seq_err)).toBeGreaterThan(0);
    const nonjob = rows.find((r) => r.device === 'mlx5_3');
    expect(nonjob).toMatchObject({ status: 'nonjob', nonJob: [{ pid: 950, comm: 'weka-client' }] });
    expect(rows.find((r) => r.device === 'mlx5_0')?.attributedTo).toBe('918001');
  });

  it('name a chrooted holder by the device it holds, with the path it sees it by', () => {
    const spec = demoTree({ layout: 'v2-sluid', nonJobHolder: false });
    // mlx5_0 is uverbs2: a process in a chroot holds it through the chroot's /dev.
    const link = '/var/tmp/sid/dev/infiniband/uverbs2';
    const chrooted = { pid: 970, comm: 'chrooted', links: [{ target: link, dev: uverbsDevice(2) }] };
    const roots = writeTree(tmpDir(), { ...spec, others: [...spec.others, chrooted] });
    const rows = attributionRows(new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle());
    const row = rows.find((r) => r.device === 'mlx5_0');
    // The job that holds it is no longer its sole user.
    expect(row).toMatchObject({ status: 'nonjob', nonJob: [{ pid: 970, comm: 'chrooted', paths: [link] }] });
    expect(holderText(row?.nonJob[0] as NonJobHolder)).toBe(`970 chrooted via ${link}`);
    // The table wraps the path in its narrow column.
    expect(renderTable(rows).replace(/\s+/g, ' ')).toContain('non-job: 970 chrooted via');
  });

  it('escape what they show in HTML', () => {
    const rows = attributionRows(new NodeCollector({ roots: demoRoots(), fdRescanIntervalMs: 60_000 }).cycle());
    const html = renderLanding([{ ...(rows[0] as (typeof rows)[0]), why: '<script>alert(1)</script>' }], {
      host: 'n<1>',
      version: '1',
      atMs: 0,
      refreshSeconds: 15,
      gaps: [],
    });
    expect(html).not.toContain('<script>');
    expect(html).toContain('&#60;script&#62;');
    expect(html).toContain('n&#60;1&#62;');
  });
});

describe.runIf(canMakeDeviceNodes('slurm-otel explain on a synthetic node'))('slurm-otel explain', () => {
  it('prints one row per port with holders, status and why', () => {
    const roots = demoRoots();
    const r = explainCli(roots);
    expect(r.status).toBe(0);
    const text = r.stdout.replace(/\s+/g, ' ');
    // The tree's fds name its device nodes by a path with the tree's prefix, shown as a chroot's is.
    expect(text).toMatch(/mlx5_1 │ 1 │ .*job 918002: 42010 python via .* 42011 python via /);
    expect(text).toMatch(/│ shared │ 2 jobs hold the device/);
    expect(text).toContain('non-job: 950 weka-client via');
  });

  it('shows control characters of process names as escapes, and UTF-8 names as they are', () => {
    const roots = demoRoots();
    const name = '\x1b]0;owned\x07\x1b[2Jwéka\u202e';
    renameProcess(roots.procfs, 950, name);
    const r = explainCli(roots);
    expect(r.status).toBe(0);
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    expect(r.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
    expect(r.stdout).toContain('\\x1b]0;owned\\x07\\x1b[2Jwéka\\u202e');
  });

  it('lists GPUs beside the ports (or says in one line why there are none)', () => {
    const spec = withGpuHolder(demoTree({ layout: 'v2-sluid', nonJobHolder: false }), 2);
    const r = explainCli(writeTree(tmpDir(), spec), '--json');
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { gpus: { device: string; status: string; jobs: string[] }[] };
    expect(out.gpus.map((g) => [g.device, g.status, g.jobs])).toEqual([
      ['nvidia0', 'sole', ['918001']],
      ['nvidia1', 'idle', []],
    ]);
    const none = explainCli(demoRoots());
    expect(none.stdout).toMatch(/^gpus: .*driver/m);
  });

  it('--json gives the same rows for scripts', () => {
    const roots = demoRoots(false);
    const r = explainCli(roots, '--json');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as { ports: { device: string; status: string }[]; gaps: string[] };
    expect(out.gaps).toEqual([]);
    expect(out.ports.map((p) => `${p.device}:${p.status}`)).toEqual([
      'mlx5_0:sole',
      'mlx5_1:shared',
      'mlx5_2:sole',
      'mlx5_3:idle',
    ]);
  });
});
