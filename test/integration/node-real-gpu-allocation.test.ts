/**
 * Slurm's GPU allocation read by the node agent on real Slurm: 22.05 with cgroup v1 and 26.05 (in
 * the project's chroot) with cgroup v2, both with ConstrainDevices=yes. The gpu node's two GRES GPUs
 * are stand-in character devices at 195:3 and 195:1, named in that order in gres.conf (so GRES
 * index, minor and file order all differ); the GPU inventory is a synthetic driver tree
 * (--nvidia-proc-root) of four GPUs, minors 0..3; processes and cgroups are real.
 *
 * Jobs A and B (--gres=gpu:1 each) hold, by an O_PATH open (no driver is behind 195 here), the
 * device SLURM_JOB_GPUS names, mapped through gres.conf's order; job C, given no GPU, holds
 * minor 2: flagged unallocated, not attributed. scancel A: its series leave.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { standInGpus, writeNvidia } from '../../src/demo/nodetree.js';
import { parseScontrolGpuIndices } from '../../src/node/read/gres.js';
import { select, type Sample } from '../support/exposition.js';
import { REAL_SLURM_START_TIMEOUT_MS, realSlurmGate, startRealSlurm, type RealSlurm } from '../support/real-slurm.js';
import { scrape, startNodeAgentProcess, type AgentProcess } from '../support/node-agent-process.js';
import { run, stopChild, waitFor } from '../support/tools.js';
import { tmpDir } from '../support/tmp.js';

const BIN = path.resolve('dist/src/cli/main.js');

const WAIT_MS = 90_000;
const GPUS = standInGpus(4);
/** Holds the GRES GPU its job was given (SLURM_JOB_GPUS → gres.conf order in argv[1]), or argv[2]. */
const HOLDER = `import os, sys, time
files = sys.argv[1].split(',')
given = os.environ.get('SLURM_JOB_GPUS', '')
paths = [files[int(i)] for i in given.split(',') if i != ''] or [sys.argv[2]]
fds = [os.open(p, os.O_PATH) for p in paths]
time.sleep(900)
`;

const CASES = [
  { release: '22.05', cgroup: 'v1', instance: 'ga' },
  { release: '26.05', cgroup: 'v2', instance: 'gb' },
] as const;

for (const c of CASES) {
  const gate = realSlurmGate(c.release);
  describe.skipIf(gate.skip)(
    `GPU allocation on real Slurm ${c.release} (cgroup ${c.cgroup}, ConstrainDevices=yes)`,
    () => {
      let slurm: RealSlurm | undefined;
      let agent: AgentProcess | undefined;
      const jobs: Record<'a' | 'b' | 'c', string> = { a: '', b: '', c: '' };
      let node = '';
      let dir = '';
      let nvproc = '';
      let sysDir = '';
      const tools = { slurmd: '', scontrol: '' };
      let files: string[] = [];
      const uuid = (minor: number) => (GPUS[minor] as (typeof GPUS)[number]).uuid;

      beforeAll(async () => {
        slurm = await startRealSlurm({
          release: c.release,
          cgroup: c.cgroup,
          nodes: 2,
          instance: c.instance,
          env: { REAL_SLURM_GPU_MINORS: '3,1', REAL_SLURM_CONSTRAIN_DEVICES: 'yes' },
        });
        node = slurm.nodes[1] as string;
        dir = tmpDir('slurm-otel-gpu-allocation-');
        const state = slurm.stateDir;
        files = [`${state}/dev/nvidia3`, `${state}/dev/nvidia1`];
        // The GPU no job was given: a device node of its own at 195:2, beside the cluster's.
        fs.writeFileSync(path.join(state, 'holder.py'), HOLDER);
        const { execFileSync } = await import('node:child_process');
        execFileSync('mknod', ['-m', '666', `${state}/dev/nvidia2`, 'c', '195', '2']);
        nvproc = path.join(dir, 'nvproc');
        sysDir = path.join(dir, 'sys');
        writeNvidia(nvproc, { gpus: GPUS });
        fs.mkdirSync(sysDir);
        const tool = (name: string) => {
          const file = path.join(dir, name);
          const inChroot = slurm?.chrootDir
            ? `chroot ${slurm.chrootDir} env SLURM_CONF=${slurm.slurmConf} LD_PRELOAD=/opt/slurm-otel/cg2only.so`
            : `env SLURM_CONF=${slurm?.slurmConf}`;
          fs.writeFileSync(file, `#!/bin/sh\nexec ${inChroot} ${name} "$@"\n`, { mode: 0o755 });
          return file;
        };
        const submit = async (gres: string[]) =>
          (
            await slurm!.run([
              'sbatch',
              '--parsable',
              '-p',
              'gpu',
              '-w',
              node,
              ...gres,
              '-o',
              '/dev/null',
              '--wrap',
              `exec python3 ${state}/holder.py ${files.join(',')} ${state}/dev/nvidia2`,
            ])
          ).stdout.trim();
        jobs.a = await submit(['--gres=gpu:1']);
        jobs.b = await submit(['--gres=gpu:1']);
        jobs.c = await submit([]);
        agent = await startNodeAgentProcess([
          '--sysfs-root',
          path.join(dir, 'sys'),
          '--nvidia-proc-root',
          path.join(dir, 'nvproc'),
          '--node-name',
          node,
          '--gpu-allocation',
          'slurm',
          '--slurmd-path',
          (tools.slurmd = tool('slurmd')),
          '--scontrol-path',
          (tools.scontrol = tool('scontrol')),
          '--unreadable-processes',
          'ignore-outside-jobs',
        ]);
      }, REAL_SLURM_START_TIMEOUT_MS + 60_000);

      afterAll(async () => {
        if (agent) await stopChild(agent.child);
        await slurm?.stop();
      }, 120_000);

      const statusOf = (s: readonly Sample[], minor: number) =>
        select(s, 'ib_slurm_gpu_attribution', { UUID: uuid(minor) }).find((x) => x.value === 1)?.labels.status;

      it(
        'jobs hold what Slurm gave them; a job holding a GPU it was not given is unallocated, not attributed',
        { timeout: WAIT_MS + 10_000 },
        async () => {
          // IDX:0 is nvidia3 (gres.conf's first line), IDX:1 nvidia1: whichever job got which.
          const s = await waitFor(
            'the allocation joined with the holders',
            async () => {
              const got = await scrape(agent!);
              const ok =
                statusOf(got, 2) === 'unallocated' && statusOf(got, 3) === 'sole' && statusOf(got, 1) === 'sole';
              return ok && select(got, 'ib_slurm_job_gpu_allocated').length === 2 ? got : undefined;
            },
            WAIT_MS,
          );
          const holders = select(s, 'ib_slurm_job_gpu_holder').map((x) => [x.labels.job_id, x.labels.device, x.value]);
          expect(holders.sort(), agent!.stderr()).toEqual(
            [
              [jobs.a, expect.stringMatching(/^nvidia[13]$/), 1],
              [jobs.b, expect.stringMatching(/^nvidia[13]$/), 1],
              [jobs.c, 'nvidia2', 0],
            ].sort(),
          );
          const allocated = select(s, 'ib_slurm_job_gpu_allocated').map((x) => [
            x.labels.job_id,
            x.labels.device,
            x.labels.held,
          ]);
          const own = holders.filter((h) => h[0] !== jobs.c).map((h) => [h[0], h[1], 'true']);
          expect(allocated.sort()).toEqual(own.sort());
          expect(statusOf(s, 0)).toBe('idle');
        },
      );

      /** The built explain on the real /proc with Slurm's GPU allocation read through the cluster's tools. */
      const explain = (...extra: string[]) =>
        run(process.execPath, [
          BIN,
          'explain',
          ...['--sysfs-root', sysDir, '--nvidia-proc-root', nvproc, '--node-name', node],
          ...['--gpu-allocation', 'slurm', '--slurmd-path', tools.slurmd, '--scontrol-path', tools.scontrol],
          ...['--unreadable-processes', 'ignore-outside-jobs'],
          ...extra,
        ]);

      it('explain asks Slurm too: the GPU held without being given is unallocated, and says why', async () => {
        const out = await explain('--json');
        const gpus = (JSON.parse(out.stdout) as { gpus: { device: string; status: string; why: string }[] }).gpus;
        const nvidia2 = gpus.find((g) => g.device === 'nvidia2');
        expect(nvidia2?.status, out.stdout).toBe('unallocated');
        expect(nvidia2?.why).toContain(jobs.c);
        expect(
          gpus
            .filter((g) => g.status === 'sole')
            .map((g) => g.device)
            .sort(),
        ).toEqual(['nvidia1', 'nvidia3']);
      });

      it('explain --job: the job given no GPU holds one Slurm did not give it; a job given one says so', async () => {
        const c = await explain('--job', jobs.c);
        expect(c.stdout, c.stderr).toMatch(/^gpu: nvidia2 \S+: held by \d+, not given by Slurm: unallocated: /m);
        expect(c.stdout).toMatch(/^slurm gpus: none$/m);
        const a = await explain('--job', jobs.a);
        expect(a.stdout, a.stderr).toMatch(/^gpu: nvidia[13] \S+: held by \d+, given by Slurm: sole: /m);
      });

      it('a job given no GPU: scontrol names this node with an empty GRES', async () => {
        const out = (await slurm!.run(['scontrol', 'show', 'job', '-d', jobs.c])).stdout;
        expect(parseScontrolGpuIndices(out, node), out).toEqual([]);
      });

      it('scancel: the job’s series leave, the other job’s stay', { timeout: WAIT_MS + 10_000 }, async () => {
        await slurm!.run(['scancel', jobs.a]);
        const s = await waitFor(
          'job A gone, job B still holding its GPU',
          async () => {
            const got = await scrape(agent!);
            const jobsOf = (family: string) => new Set(select(got, family).map((x) => x.labels.job_id));
            const holders = jobsOf('ib_slurm_job_gpu_holder');
            const allocated = jobsOf('ib_slurm_job_gpu_allocated');
            const aGone = !holders.has(jobs.a) && !allocated.has(jobs.a);
            return aGone && holders.has(jobs.b) && allocated.has(jobs.b) ? got : undefined;
          },
          WAIT_MS,
        );
        const b = select(s, 'ib_slurm_job_gpu_holder', { job_id: jobs.b });
        expect(b.map((x) => x.value)).toEqual([1]);
      });
    },
  );
}
