import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Allocation } from '../../../src/node/read/cgroups.js';
import { JobIdResolver, parseStepdTitle } from '../../../src/node/read/jobids.js';
import { Problems } from '../../../src/node/read/problems.js';
import { parseMetadata, parseSqueue, squeueJobIds, squeueMetadata } from '../../../src/node/read/squeue.js';
import { NodeCollector } from '../../../src/node/collect.js';
import { demoTree } from '../../../src/demo/scenarios.js';
import { writeProcess, writeTree } from '../../../src/demo/nodetree.js';
import { silentLogger } from '../../support/log.js';
import { startTestNodeAgent } from '../../support/agents.js';
import { familyKeyErrors } from '../../support/catalogue-keys.js';
import { tmpDir } from '../../support/tmp.js';
import { waitFor } from '../../support/tools.js';

const SLUID = 'sEKNKTV3WPV500';

function alloc(id: string, stepdPids: number[], idKind: Allocation['idKind'] = 'sluid'): Allocation {
  return {
    key: `scope/${id}`,
    id,
    idKind,
    layout: 'v2-sluid',
    scope: 'scope',
    pids: [],
    stepdPids,
    procsFiles: [],
    gaps: [],
  };
}

describe('parseStepdTitle', () => {
  it.each([
    ['slurmstepd: [918001.0]', '918001'],
    ['slurmstepd: [918001.batch]\0\0\0', '918001'],
    ['slurmstepd: [42.extern stepmgr]', '42'],
    ['slurmstepd: [7.1+0]', '7'],
  ])('%j → %s', (title, id) => expect(parseStepdTitle(title)).toBe(id));

  it.each(['slurmstepd: [infinity]', 'python train.py', '', 'slurmstepd: [abc.0]'])('rejects %j', (title) => {
    expect(parseStepdTitle(title)).toBeUndefined();
  });
});

describe('JobIdResolver', () => {
  function proc(): string {
    const dir = path.join(tmpDir(), 'proc');
    fs.mkdirSync(dir);
    return dir;
  }

  it('passes numeric ids through and resolves a SLUID from its stepd titles', () => {
    const p = proc();
    writeProcess(p, { pid: 5, comm: 'slurmstepd', cmdline: 'slurmstepd: [918001.0]' });
    writeProcess(p, { pid: 6, comm: 'slurmstepd', cmdline: 'slurmstepd: [918001.extern]' });
    const r = new JobIdResolver(p).resolve([alloc('123', [], 'jobid'), alloc(SLUID, [5, 6])], new Problems());
    expect(r.get('scope/123')).toEqual({ jobId: '123' });
    expect(r.get(`scope/${SLUID}`)).toEqual({ jobId: '918001' });
  });

  it('refuses to guess when the stepd titles disagree', () => {
    const p = proc();
    writeProcess(p, { pid: 5, comm: 'slurmstepd', cmdline: 'slurmstepd: [1.0]' });
    writeProcess(p, { pid: 6, comm: 'slurmstepd', cmdline: 'slurmstepd: [2.0]' });
    const problems = new Problems();
    const r = new JobIdResolver(p).resolve([alloc(SLUID, [5, 6])], problems);
    expect(r.get(`scope/${SLUID}`)).toHaveProperty('unresolved');
    expect(problems.list()[0]).toMatchObject({ source: 'jobid', kind: 'malformed' });
  });

  it('leaves a SLUID unresolved when no stepd is readable, and never parses it as a number', () => {
    const r = new JobIdResolver(proc()).resolve([alloc(SLUID, [99])], new Problems());
    expect(r.get(`scope/${SLUID}`)).toEqual({ unresolved: 'no readable slurmstepd title' });
  });

  it('keeps a resolved SLUID cached after the stepd exits, and forgets it when the job ends', () => {
    const p = proc();
    writeProcess(p, { pid: 5, comm: 'slurmstepd', cmdline: 'slurmstepd: [77.0]' });
    const resolver = new JobIdResolver(p);
    resolver.resolve([alloc(SLUID, [5])], new Problems());
    fs.rmSync(path.join(p, '5'), { recursive: true });
    expect(resolver.resolve([alloc(SLUID, [5])], new Problems()).get(`scope/${SLUID}`)).toEqual({ jobId: '77' });
    resolver.resolve([], new Problems());
    expect(resolver.resolve([alloc(SLUID, [5])], new Problems()).get(`scope/${SLUID}`)).toHaveProperty('unresolved');
  });

  it('falls back to the squeue table and asks it to refresh while SLUIDs wait', () => {
    let asked = 0;
    const table = { lookup: (s: string) => (s === SLUID ? '555' : undefined), want: () => void asked++ };
    const other = 's0A1B2C3D4E5F6';
    const r = new JobIdResolver(proc(), table).resolve([alloc(SLUID, []), alloc(other, [])], new Problems());
    expect(r.get(`scope/${SLUID}`)).toEqual({ jobId: '555' });
    expect(r.get(`scope/${other}`)).toHaveProperty('unresolved');
    expect(asked).toBe(1);
  });
});

describe('squeue', () => {
  it('parses padded and unpadded lines, ignoring anything else', () => {
    const t = parseSqueue(`918001              |${SLUID}\n42|s5K1KKYAYG5D00\nbad line\n43|notasluid\n`);
    expect(Object.fromEntries(t)).toEqual({ [SLUID]: '918001', s5K1KKYAYG5D00: '42' });
  });

  it('runs a real squeue-like program in the background and keeps its table when it later fails', async () => {
    const dir = tmpDir();
    const script = path.join(dir, 'squeue');
    const argsFile = path.join(dir, 'args');
    fs.writeFileSync(
      script,
      `#!/bin/sh\necho "$@" > ${argsFile}\n[ -e ${dir}/fail ] && exit 1\necho "918001|${SLUID}"\n`,
      { mode: 0o755 },
    );
    const errors: number[] = [];
    const table = squeueJobIds({
      path: script,
      nodeName: 'n1',
      minIntervalMs: 0,
      timeoutMs: 5000,
      logger: silentLogger(),
      onError: () => errors.push(1),
    });
    table.want();
    await waitFor('table.lookup(SLUID) to be 918001', () => table.lookup(SLUID) === '918001');
    expect(fs.readFileSync(argsFile, 'utf8').trim()).toBe('--noheader --nodelist=n1 --Format=JobID:|,Sluid:');
    fs.writeFileSync(path.join(dir, 'fail'), '');
    table.want();
    await waitFor('errors.length to be 1', () => errors.length === 1);
    expect(table.lookup(SLUID)).toBe('918001');
  });
});

/** Whether a process runs (a zombie waiting for its parent counts as gone). */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** A squeue stand-in that starts a long-sleeping child (as wrapper scripts do) and writes its and the child's PIDs. */
function squeueWithChild(dir: string, then: string): { script: string; pids: () => number[] | undefined } {
  const script = path.join(dir, 'squeue');
  const pidFile = path.join(dir, 'pids');
  fs.writeFileSync(
    script,
    `#!/bin/sh\nsleep 300 &\necho $$ $! > ${pidFile}.tmp && mv ${pidFile}.tmp ${pidFile}\n${then}\n`,
    { mode: 0o755 },
  );
  return {
    script,
    pids: () => (fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8').trim().split(' ').map(Number) : undefined),
  };
}

describe('squeue runs leave no process behind', () => {
  const started: number[] = [];
  afterEach(() => {
    for (const pid of started.splice(0)) if (running(pid)) process.kill(pid, 'SIGKILL');
  });

  /** The PID of the fake squeue's child, once it runs; both are killed after the test whatever happens. */
  async function childOf(fake: { pids: () => number[] | undefined }): Promise<number> {
    await waitFor('the stand-in and its child to write their PIDs', fake.pids);
    const [shell, child] = fake.pids() as [number, number];
    started.push(shell, child);
    return child;
  }

  it('kills the children of a squeue that timed out', async () => {
    const fake = squeueWithChild(tmpDir(), 'sleep 300');
    const errors: number[] = [];
    const table = squeueJobIds({
      path: fake.script,
      nodeName: 'n1',
      minIntervalMs: 0,
      timeoutMs: 500,
      logger: silentLogger(),
      onError: () => errors.push(1),
    });
    table.want();
    const pid = await childOf(fake);
    await waitFor('errors.length to be 1', () => errors.length === 1);
    await waitFor('running(pid) to be false', () => running(pid) === false);
  });

  it('kills what a squeue that answered left running, and keeps its answer', async () => {
    const fake = squeueWithChild(tmpDir(), `echo "918001|${SLUID}"`);
    const table = squeueJobIds({
      path: fake.script,
      nodeName: 'n1',
      minIntervalMs: 0,
      timeoutMs: 60_000,
      logger: silentLogger(),
    });
    table.want();
    const pid = await childOf(fake);
    await waitFor('table.lookup(SLUID) to be 918001', () => table.lookup(SLUID) === '918001');
    await waitFor('running(pid) to be false', () => running(pid) === false);
  });

  it('counts a squeue that cannot be started, and tries again at the next request', async () => {
    const errors: number[] = [];
    const table = squeueJobIds({
      path: path.join(tmpDir(), 'missing-squeue'),
      nodeName: 'n1',
      minIntervalMs: 0,
      timeoutMs: 60_000,
      logger: silentLogger(),
      onError: () => errors.push(1),
    });
    table.want();
    await waitFor('errors.length to be 1', () => errors.length === 1);
    table.want();
    await waitFor('errors.length to be 2', () => errors.length === 2);
  });

  it('refuses squeue output beyond 16 MiB, keeping the previous table', async () => {
    const dir = tmpDir();
    const script = path.join(dir, 'squeue');
    fs.writeFileSync(
      script,
      `#!/bin/sh\n[ -e ${dir}/big ] && exec head -c 17000000 /dev/zero\necho "918001|${SLUID}"\n`,
      { mode: 0o755 },
    );
    const errors: number[] = [];
    const table = squeueJobIds({
      path: script,
      nodeName: 'n1',
      minIntervalMs: 0,
      timeoutMs: 60_000,
      logger: silentLogger(),
      onError: () => errors.push(1),
    });
    table.want();
    await waitFor('table.lookup(SLUID) to be 918001', () => table.lookup(SLUID) === '918001');
    fs.writeFileSync(path.join(dir, 'big'), '');
    table.want();
    await waitFor('errors.length to be 1', () => errors.length === 1);
    expect(table.lookup(SLUID)).toBe('918001');
  });

  it('kills a squeue run in flight, children included, when the agent stops', async () => {
    const dir = tmpDir();
    const fake = squeueWithChild(dir, 'sleep 300');
    const roots = writeTree(path.join(dir, 'tree'), demoTree({ layout: 'v2', nonJobHolder: false }));
    const agent = await startTestNodeAgent(roots, {
      jobMetadata: { path: fake.script, nodeName: 'n1', minIntervalMs: 0, timeoutMs: 60_000 },
    });
    let pid: number;
    try {
      pid = await childOf(fake);
    } finally {
      await agent.stop();
    }
    await waitFor('running(pid) to be false', () => running(pid) === false);
  });
});

describe('job metadata from squeue', () => {
  it('parses user, account and partition per job', () => {
    expect(Object.fromEntries(parseMetadata('918001|alice|ml|gpu\n  42 | bob | physics | cpu \nbad\n'))).toEqual({
      918001: { user_name: 'alice', account: 'ml', slurm_partition: 'gpu' },
      42: { user_name: 'bob', account: 'physics', slurm_partition: 'cpu' },
    });
  });

  it('labels the job series of a node with them once squeue has answered', async () => {
    const dir = tmpDir();
    const script = path.join(dir, 'squeue');
    fs.writeFileSync(script, `#!/bin/sh\nprintf '918001|alice|ml-research|gpu\\n918004|dave|bio|gpu\\n'\n`, {
      mode: 0o755,
    });
    const roots = writeTree(path.join(dir, 'tree'), demoTree({ layout: 'v2', nonJobHolder: false }));
    const metadata = squeueMetadata({
      path: script,
      nodeName: 'gpu-001',
      minIntervalMs: 0,
      timeoutMs: 5000,
      logger: silentLogger(),
    });
    const collector = new NodeCollector({ roots, fdRescanIntervalMs: 60_000, metadata });
    const first = collector.cycle(1000);
    // Nothing known yet: the labels exist, empty, so the series keep one identity.
    expect(first.families.find((f) => f.spec.name === 'ib_slurm_job_processes')?.points[0]?.attributes).toMatchObject({
      user_name: '',
      account: '',
    });
    await waitFor(
      'metadata.lookup(918001)?.user_name to be alice',
      () => metadata.lookup('918001')?.user_name === 'alice',
    );
    const c = collector.cycle(2000);
    expect(familyKeyErrors([...first.families, ...c.families], true)).toEqual([]);
    const counters = c.families.find((f) => f.spec.name === 'ib_slurm_job_counters')?.points ?? [];
    expect(
      counters
        .filter((p) => p.attributes.job_id === '918001')
        .every((p) => p.attributes.user_name === 'alice' && p.attributes.slurm_partition === 'gpu'),
    ).toBe(true);
    expect(counters.some((p) => p.attributes.job_id === '918004' && p.attributes.account === 'bio')).toBe(true);
  });

  it('adds no metadata labels when no source is configured', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false }));
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1000);
    expect(
      Object.keys(c.families.find((f) => f.spec.name === 'ib_slurm_job_processes')?.points[0]?.attributes ?? {}),
    ).toEqual(['job_id']);
    expect(familyKeyErrors(c.families)).toEqual([]);
  });
});
