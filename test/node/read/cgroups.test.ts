import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { scanCgroups, pidLeft, parsePids } from '../../../src/node/read/cgroups.js';
import { Problems } from '../../../src/node/read/problems.js';
import { demoTree } from '../../../src/demo/scenarios.js';
import { writeTree, jobDirName, type TreeLayout } from '../../../src/demo/nodetree.js';
import { HOST_CGROUP, slurmTreesOnHost } from '../../support/host.js';
import { asUnprivileged, deny, tmpDir } from '../../support/tmp.js';

function put(file: string, content: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
}

describe('scanCgroups', () => {
  for (const layout of ['v1', 'v2', 'v2-sluid'] as TreeLayout[]) {
    it(`finds every demo job and its processes in the ${layout} layout`, () => {
      const spec = demoTree({ layout, nonJobHolder: false });
      const roots = writeTree(tmpDir(), spec);
      const scan = scanCgroups(roots.cgroupfs, new Problems());
      expect(scan.gaps).toEqual([]);
      expect(scan.allocations).toHaveLength(spec.jobs.length);
      for (const job of spec.jobs) {
        const id = layout === 'v2-sluid' ? job.sluid : job.jobId;
        const alloc = scan.allocations.find((a) => a.id === id);
        expect(alloc, `job ${id}`).toBeDefined();
        expect(alloc?.layout).toBe(layout);
        expect(alloc?.idKind).toBe(layout === 'v2-sluid' ? 'sluid' : 'jobid');
        const tasks = job.steps.flatMap((s) => s.tasks.map((t) => t.pid));
        const stepds = job.steps.flatMap((s) => (s.stepd ? [s.stepd.pid] : []));
        if (layout === 'v1') expect([...(alloc?.pids ?? [])].sort()).toEqual([...tasks, ...stepds].sort());
        else {
          expect([...(alloc?.pids ?? [])].sort()).toEqual(tasks.sort());
          expect(alloc?.stepdPids).toEqual(stepds);
        }
      }
      expect(scan.scopes.map((s) => s.layout)).toContain(layout);
    });
  }

  it('counts a v1 job once across controllers, with the union of its PIDs', () => {
    const root = tmpDir();
    put(path.join(root, 'freezer/slurm/uid_5/job_77/step_0/task_0/cgroup.procs'), '10\n11\n');
    put(path.join(root, 'memory/slurm/uid_5/job_77/step_0/task_0/cgroup.procs'), '11\n12\n');
    put(path.join(root, 'cpuset/slurm_nodeA/uid_5/job_78/step_batch/cgroup.procs'), '20\n');
    fs.symlinkSync('freezer', path.join(root, 'freezer_alias'));
    const scan = scanCgroups(root, new Problems());
    expect(scan.allocations.map((a) => a.id).sort()).toEqual(['77', '78']);
    expect([...(scan.allocations.find((a) => a.id === '77')?.pids ?? [])].sort()).toEqual([10, 11, 12]);
    expect(scan.scopes).toEqual(
      expect.arrayContaining([
        { layout: 'v1', scope: 'slurm' },
        { layout: 'v1', scope: 'slurm_nodeA' },
      ]),
    );
  });

  it('finds scopes under nested slices and node-prefixed scope names, skipping system/ and slurmd/', () => {
    const root = tmpDir();
    put(path.join(root, 'cgroup.controllers'), 'cpu memory\n');
    const scope = path.join(root, 'a.slice/b.slice/nodeA_slurmstepd.scope');
    put(path.join(scope, 'system/cgroup.procs'), '5\n');
    put(path.join(scope, 'slurmd/cgroup.procs'), '6\n');
    put(path.join(scope, 'job_42/step_0/user/task_0/cgroup.procs'), '100\n');
    put(path.join(scope, 'job_42/step_0/user/task_special/cgroup.procs'), '101\n');
    put(path.join(scope, 'job_42/step_extern/slurm/cgroup.procs'), '99\n');
    put(path.join(scope, 'job_42/step_1+0/user/task_0/cgroup.procs'), '102\n');
    put(path.join(root, 'user.slice/user-0.slice/session-1.scope/cgroup.procs'), '7\n');
    const scan = scanCgroups(root, new Problems());
    expect(scan.allocations).toHaveLength(1);
    const [a] = scan.allocations;
    expect(a?.scope).toBe('a.slice/b.slice/nodeA_slurmstepd.scope');
    expect([...(a?.pids ?? [])].sort()).toEqual([100, 101, 102]);
    expect(a?.stepdPids).toEqual([99]);
  });

  it("reads 26.05's job_<id> tree (CgroupJobIdPaths=yes) as a real slurmstepd makes it: v2, job id from the name", () => {
    // Seen under Debian's Slurm 26.05.5 (cgroup/v2) for a batch job running `srun -n1 sleep 300 & sleep 300`.
    const root = tmpDir();
    put(path.join(root, 'cgroup.controllers'), 'cpu memory pids\n');
    const scope = path.join(root, 'system.slice/pr8dequ1n1_slurmstepd.scope');
    put(path.join(scope, 'cgroup.procs'), '');
    put(path.join(scope, 'slurmd/cgroup.procs'), '999\n');
    put(path.join(scope, 'system/cgroup.procs'), '');
    const job = path.join(scope, 'job_40131000');
    for (const dir of ['', 'step_0', 'step_0/user', 'step_batch', 'step_batch/user'])
      put(path.join(job, dir, 'cgroup.procs'), '');
    put(path.join(job, 'step_0/slurm/cgroup.procs'), '1154\n');
    put(path.join(job, 'step_0/user/task_special/cgroup.procs'), '1163\n');
    put(path.join(job, 'step_batch/slurm/cgroup.procs'), '1134\n');
    put(path.join(job, 'step_batch/user/task_special/cgroup.procs'), '1142\n1143\n1144\n1149\n');
    const scan = scanCgroups(root, new Problems());
    expect(scan.scopes).toEqual([{ layout: 'v2', scope: 'system.slice/pr8dequ1n1_slurmstepd.scope' }]);
    expect(scan.allocations).toHaveLength(1);
    const [a] = scan.allocations;
    expect([a?.id, a?.idKind, a?.layout]).toEqual(['40131000', 'jobid', 'v2']);
    expect([...(a?.pids ?? [])].sort()).toEqual([1142, 1143, 1144, 1149, 1163]);
    expect([...(a?.stepdPids ?? [])].sort()).toEqual([1134, 1154]);
    // No rdma controller for the job: its listing shows no rdma.current, so none is asked for.
    expect(a?.rdmaDir).toBeUndefined();
    expect(a?.jobDirs).toEqual([{ controllers: '', dir: job, files: ['cgroup.procs'] }]);
  });

  it("keeps each job directory's files as listed: rdma.current is looked for where the listing shows it", () => {
    const root = tmpDir();
    put(path.join(root, 'cgroup.controllers'), 'cpu memory rdma\n');
    const scope = path.join(root, 'system.slice/slurmstepd.scope');
    const withRdma = path.join(scope, 'job_1');
    const without = path.join(scope, 'job_2');
    put(path.join(withRdma, 'step_0/user/task_0/cgroup.procs'), '10\n');
    put(path.join(without, 'step_0/user/task_0/cgroup.procs'), '20\n');
    for (const job of [withRdma, without]) {
      put(path.join(job, 'cgroup.procs'), '');
      put(path.join(job, 'memory.current'), '4096\n');
    }
    put(path.join(withRdma, 'rdma.current'), 'mlx5_0 hca_handle=1 hca_object=3\n');
    const byId = new Map(scanCgroups(root, new Problems()).allocations.map((a) => [a.id, a]));
    expect(byId.get('1')?.rdmaDir).toBe(withRdma);
    expect(byId.get('2')?.rdmaDir).toBeUndefined();
    expect([...(byId.get('1')?.jobDirs?.[0]?.files ?? [])].sort()).toEqual([
      'cgroup.procs',
      'memory.current',
      'rdma.current',
    ]);
    expect([...(byId.get('2')?.jobDirs?.[0]?.files ?? [])].sort()).toEqual(['cgroup.procs', 'memory.current']);
  });

  it("v1: the rdma hierarchy's job directory is where rdma.current is looked for, when listed there", () => {
    const root = tmpDir();
    for (const ctrl of ['rdma', 'cpuacct']) {
      put(path.join(root, ctrl, 'slurm/uid_1000/job_7/step_0/task_0/cgroup.procs'), '70\n');
      put(path.join(root, ctrl, 'slurm/uid_1000/job_7/cgroup.procs'), '');
    }
    const rdmaJob = path.join(root, 'rdma/slurm/uid_1000/job_7');
    expect(scanCgroups(root, new Problems()).allocations[0]?.rdmaDir).toBeUndefined();
    put(path.join(rdmaJob, 'rdma.current'), 'mlx5_0 hca_handle=0 hca_object=0\n');
    const [a] = scanCgroups(root, new Problems()).allocations;
    expect(a?.rdmaDir).toBe(rdmaJob);
    expect(a?.jobDirs?.map((d) => d.controllers).sort()).toEqual(['cpuacct', 'rdma']);
  });

  it('reports one layout per scope: v2-sluid for a 26.05 scope, v2 for a job_<id> scope, in any order', () => {
    const root = tmpDir();
    put(path.join(root, 'cgroup.controllers'), 'cpu memory\n');
    const sluid = path.join(root, 'system.slice/c26n1_slurmstepd.scope');
    put(path.join(sluid, 'slurmd/cgroup.procs'), '5\n');
    put(path.join(sluid, 'system/cgroup.procs'), '6\n');
    put(path.join(sluid, 'job_41/step_0/user/task_0/cgroup.procs'), '100\n');
    put(path.join(sluid, 's9KHM8SPGC0H00/step_batch/user/task_special/cgroup.procs'), '101\n');
    put(path.join(sluid, 's9KHM8SPGC1200/step_0/user/task_special/cgroup.procs'), '102\n');
    put(path.join(root, 'system.slice/c22n1_slurmstepd.scope/job_42/step_0/user/task_0/cgroup.procs'), '103\n');
    const scan = scanCgroups(root, new Problems());
    expect(scan.allocations).toHaveLength(4);
    expect([...scan.scopes].sort((a, b) => a.scope.localeCompare(b.scope))).toEqual([
      { layout: 'v2', scope: 'system.slice/c22n1_slurmstepd.scope' },
      { layout: 'v2-sluid', scope: 'system.slice/c26n1_slurmstepd.scope' },
    ]);
  });

  it('keeps an unrecognised job directory as an unresolvable allocation rather than dropping it', () => {
    const root = tmpDir();
    put(path.join(root, 'cgroup.controllers'), '');
    put(path.join(root, 'system.slice/slurmstepd.scope/job_abc/step_0/user/task_0/cgroup.procs'), '300\n');
    const [a] = scanCgroups(root, new Problems()).allocations;
    expect(a?.idKind).toBe('unknown');
    expect(a?.pids).toEqual([300]);
  });

  it('reports an unreadable job subtree as a gap, not as an empty job', () => {
    const spec = demoTree({ layout: 'v2', nonJobHolder: false });
    const roots = writeTree(tmpDir(), spec);
    const job = spec.jobs[1];
    if (!job) throw new Error('demo has jobs');
    const step = path.join(roots.cgroupfs, 'system.slice/slurmstepd.scope', jobDirName(job, 'v2'), 'step_0');
    deny(path.join(step, 'user'));
    const problems = new Problems();
    const cwd = process.cwd();
    const scan = asUnprivileged(() => scanCgroups(roots.cgroupfs, problems));
    const alloc = scan.allocations.find((a) => a.id === job.jobId);
    expect(alloc?.gaps.length).toBeGreaterThan(0);
    expect(problems.list()).toEqual([expect.objectContaining({ source: 'cgroup', kind: 'denied' })]);
    // Read from within the job directory, told by whole paths; the working directory given back.
    for (const gap of alloc?.gaps ?? []) expect(gap.startsWith(`${path.join(step, 'user')}`), gap).toBe(true);
    expect(process.cwd()).toBe(cwd);
  });

  it('walks each job from within its directory: a cgroup.procs past PATH_MAX from the root is read', () => {
    // The kernel refuses a whole path over 4096 bytes (ENAMETOOLONG); named from the job directory, it
    // walks only the names below it. Shows the walk reads from within the job, as working-dir.ts says.
    // The root and slices long (each name at most 255 bytes, the walk at most 8 slices deep), the job's tree longer.
    let root = tmpDir();
    while (root.length < 1500) root = path.join(root, 'r'.repeat(250));
    put(path.join(root, 'cgroup.controllers'), '');
    let deep = path.join(root, 'system.slice');
    while (deep.length < 3100) deep = path.join(deep, `s${'x'.repeat(240)}.slice`);
    const job = path.join(deep, 'slurmstepd.scope/job_9');
    expect(job.length).toBeLessThan(4000);
    fs.mkdirSync(job, { recursive: true });
    const task = path.join('step_0', ...Array.from({ length: 4 }, () => `t${'y'.repeat(250)}`));
    const cwd = process.cwd();
    process.chdir(job);
    fs.mkdirSync(task, { recursive: true });
    fs.writeFileSync(path.join(task, 'cgroup.procs'), '900\n');
    process.chdir(cwd);
    try {
      expect(() => fs.readFileSync(path.join(job, task, 'cgroup.procs'))).toThrow(/ENAMETOOLONG/);
      const scan = scanCgroups(root, new Problems());
      expect(scan.allocations.map((a) => [a.id, a.pids])).toEqual([['9', [900]]]);
      expect(process.cwd()).toBe(cwd);
    } finally {
      // Removed from within the job: Node 22's recursive rmSync names whole paths, and fails on these.
      process.chdir(job);
      fs.rmSync('step_0', { recursive: true, force: true });
      process.chdir(cwd);
    }
  });

  it('treats a job directory vanishing mid-scan as normal (no gap, no problem)', () => {
    const root = tmpDir();
    put(path.join(root, 'cgroup.controllers'), '');
    const scope = path.join(root, 'system.slice/slurmstepd.scope');
    fs.mkdirSync(path.join(scope, 'job_1'), { recursive: true });
    const problems = new Problems();
    const scan = scanCgroups(root, problems);
    expect(scan.allocations[0]?.gaps).toEqual([]);
    expect(problems.list()).toEqual([]);
  });

  it('returns nothing, without error, on a node with no Slurm cgroups, and says what it looked for', () => {
    const root = tmpDir();
    put(path.join(root, 'cgroup.controllers'), '');
    fs.mkdirSync(path.join(root, 'system.slice/sshd.service'), { recursive: true });
    const problems = new Problems();
    const scan = scanCgroups(root, problems);
    expect(scan).toMatchObject({ allocations: [], scopes: [], gaps: [], foundSlurm: false });
    expect(scan.searched).toBe(`\`*slurmstepd.scope\` under \`*.slice\` in the cgroup v2 tree ${root}`);
    expect(problems.list()).toEqual([]);
  });

  it('on a v1 root with no slurm* tree, names the controllers and the unified tree it searched', () => {
    const root = tmpDir();
    for (const d of ['freezer/user.slice', 'memory/system.slice', 'unified/system.slice'])
      fs.mkdirSync(path.join(root, d), { recursive: true });
    const scan = scanCgroups(root, new Problems());
    expect(scan.foundSlurm).toBe(false);
    expect(scan.searched).toBe(
      `\`slurm*\` under each cgroup v1 controller in ${root}, and \`*slurmstepd.scope\` under \`*.slice\` in ${path.join(root, 'unified')}`,
    );
  });

  it('counts an empty Slurm hierarchy as found: a v1 slurm_<node> root or a v2 stepd scope without jobs', () => {
    const v1 = tmpDir();
    fs.mkdirSync(path.join(v1, 'freezer/slurm_node7/system'), { recursive: true });
    expect(scanCgroups(v1, new Problems())).toMatchObject({
      foundSlurm: true,
      allocations: [],
      scopes: [{ layout: 'v1', scope: 'slurm_node7' }],
    });
    const v2 = tmpDir();
    put(path.join(v2, 'cgroup.controllers'), '');
    put(path.join(v2, 'system.slice/node7_slurmstepd.scope/system/cgroup.procs'), '');
    expect(scanCgroups(v2, new Problems())).toMatchObject({ foundSlurm: true, allocations: [] });
  });

  it('scans a copied v2 tree without cgroup.controllers as v2, recognised by its *.slice directories', () => {
    const spec = demoTree({ layout: 'v2', nonJobHolder: false });
    const roots = writeTree(tmpDir(), spec);
    fs.rmSync(path.join(roots.cgroupfs, 'cgroup.controllers'));
    const scan = scanCgroups(roots.cgroupfs, new Problems());
    expect(scan.foundSlurm).toBe(true);
    expect(scan.allocations.map((a) => `${a.layout} ${a.id}`).sort()).toEqual(
      spec.jobs.map((j) => `v2 ${j.jobId}`).sort(),
    );
  });
});

describe('scanCgroups on this host (real /sys/fs/cgroup)', () => {
  it('finds no Slurm hierarchy while no Slurm runs here, and says where it looked', (ctx) => {
    if (!fs.existsSync(HOST_CGROUP)) ctx.skip(`${HOST_CGROUP} does not exist on this host`);
    const trees = slurmTreesOnHost();
    if (trees.length > 0)
      ctx.skip(
        `Slurm cgroup trees exist here (${trees.join(', ')}): someone runs Slurm, so "none found" cannot be checked`,
      );
    const scan = scanCgroups(HOST_CGROUP, new Problems());
    expect(scan.foundSlurm).toBe(false);
    expect(scan.allocations).toEqual([]);
    expect(scan.searched).toContain(HOST_CGROUP);
  });
});

describe('parsePids and pidLeft', () => {
  it('parses cgroup.procs and ignores junk lines', () => {
    expect(parsePids('1\n 22 \n\nx\n-3\n4')).toEqual([1, 22, 4]);
  });

  it('tells an exited PID (no longer listed) from a listed one', () => {
    const root = tmpDir();
    const file = path.join(root, 'cgroup.procs');
    put(file, '5\n6\n');
    const alloc = {
      key: 'k',
      id: '1',
      idKind: 'jobid',
      layout: 'v2',
      scope: 's',
      pids: [5, 6],
      stepdPids: [],
      procsFiles: [file],
      gaps: [],
    } as const;
    expect(pidLeft(alloc, 5)).toBe(false);
    put(file, '6\n');
    expect(pidLeft(alloc, 5)).toBe(true);
  });
});
