/**
 * Stand-ins for `slurmd -G` and `scontrol show job -d <id>` that the demo runs (and the tests): one
 * POSIX sh script answering from files in its directory, shaped as Slurm 26.05 prints them
 * (fixtures/node/slurm-gres). Run by /bin/sh, so it works where the directory is mounted noexec
 * and where there is no Node.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { GpuAllocationOptions } from '../node/read/gres-source.js';
import { DEMO_GPU_ALLOCATION, DEMO_GPU_FILES, DEMO_NODE } from './scenarios.js';

const SCRIPT = `#!/bin/sh
dir=$(dirname "$0")
case "$1 $2" in
  '-G -N') cat "$dir/slurmd-G.txt" >&2 ;;
  'show job')
    f="$dir/job-$4.txt"
    if [ "$3" = -d ] && [ -f "$f" ]; then cat "$f"; else echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1; fi ;;
  *) echo "unknown command: $*" >&2; exit 1 ;;
esac
`;

export class FakeSlurmGres {
  /** The script: `/bin/sh <script> -G -N <node>` is slurmd, `/bin/sh <script> show job -d <id>` scontrol. */
  readonly script: string;

  constructor(
    readonly dir: string,
    private readonly node: string,
  ) {
    fs.mkdirSync(dir, { recursive: true });
    this.script = path.join(dir, 'slurm-gres');
    fs.writeFileSync(this.script, SCRIPT, { mode: 0o755 });
  }

  /** As the node agent runs either tool: by /bin/sh. */
  get tool(): { readonly path: string; readonly leadingArgs: readonly string[] } {
    return { path: '/bin/sh', leadingArgs: [this.script] };
  }

  /** slurmd's GPU GRES lines, File= in gres.conf's order (the GRES index is the position here). */
  gpuFiles(files: readonly string[], type = 'h200'): void {
    const lines = files.map(
      (f, i) =>
        `[2026-12-04T23:23:06.383] Gres Name=gpu Type=${type} Count=1 Index=${/(\d+)$/.exec(f)?.[1] ?? i} ID=7696487 File=${f} Links=(null) Flags=HAS_FILE,HAS_TYPE,ENV_NVML,ENV_RSMI,ENV_ONEAPI,ENV_OPENCL,ENV_DEFAULT\n`,
    );
    fs.writeFileSync(path.join(this.dir, 'slurmd-G.txt'), lines.join(''));
  }

  /** A running job on this node given these GRES indices (none: a job without GPUs). */
  job(jobId: string, indices: readonly number[], type = 'h200'): void {
    const gres = indices.length === 0 ? '' : `gpu:${type}:${indices.length}(IDX:${indices.join(',')})`;
    const text = [
      `JobId=${jobId} JobName=job.sh`,
      `   JobState=RUNNING Reason=None Dependency=(null)`,
      `   Partition=gpu AllocNode:Sid=localhost:7371`,
      `   NodeList=${this.node}`,
      `   BatchHost=${this.node}`,
      `   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*`,
      `   JOB_GRES=${indices.length === 0 ? '(null)' : `gpu:${type}:${indices.length}`}`,
      `     Nodes=${this.node} CPU_IDs=0 Mem=1000 GRES=${gres}`,
      `   MinCPUsNode=1 MinMemoryCPU=1000M MinTmpDiskNode=0`,
      '',
    ];
    fs.writeFileSync(path.join(this.dir, `job-${jobId}.txt`), text.join('\n'));
  }
}

/**
 * Slurm's word on the demo node's GPUs (DEMO_GPU_ALLOCATION, gres.conf order DEMO_GPU_FILES) from
 * stand-in tools written into `dir`; `devices` gives the tree's device numbers, since its
 * device nodes are names only.
 */
export function demoGpuAllocation(
  dir: string,
  devices: ReadonlyMap<string, string>,
): Omit<GpuAllocationOptions, 'logger' | 'onError'> {
  const slurm = new FakeSlurmGres(dir, DEMO_NODE);
  slurm.gpuFiles(DEMO_GPU_FILES.map((minor) => `/dev/nvidia${minor}`));
  for (const [job, minors] of Object.entries(DEMO_GPU_ALLOCATION))
    slurm.job(
      job,
      minors.map((m) => DEMO_GPU_FILES.indexOf(m)),
    );
  return {
    slurmd: slurm.tool,
    scontrol: slurm.tool,
    nodeName: DEMO_NODE,
    minIntervalMs: 1_000,
    mapIntervalMs: 600_000,
    timeoutMs: 5_000,
    deviceOf: (p) => devices.get(p),
  };
}
