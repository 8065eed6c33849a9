/** Slurm's GPU allocation read through slurmd -G and scontrol, with scripts answering as Slurm 26.05 did. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SlurmGpuAllocation } from '../../../src/node/read/gres-source.js';
import { silentLogger } from '../../support/log.js';
import { tmpDir } from '../../support/tmp.js';

const FIXTURES = path.resolve('fixtures/node/slurm-gres/26.05');
/** The recorded node's GRES files (slurmd-G.txt), as device numbers. */
const DEVICES: Record<string, string> = {
  '/tmp/so-alloc-m2/dev/nvidia3': '195:3',
  '/tmp/so-alloc-m2/dev/nvidia1': '195:1',
};

/** slurmd and scontrol as scripts: scontrol knows jobs 6000 and 6001 (recorded), no other. */
function tools(dir: string): { slurmd: string; scontrol: string } {
  const slurmd = path.join(dir, 'slurmd');
  const scontrol = path.join(dir, 'scontrol');
  fs.writeFileSync(slurmd, `#!/bin/sh\ncat ${FIXTURES}/slurmd-G.txt\n`, { mode: 0o755 });
  fs.writeFileSync(
    scontrol,
    [
      '#!/bin/sh',
      'f="' + FIXTURES + '/scontrol-show-job-d-$4.txt"',
      'if [ -f "$f" ]; then cat "$f"; exit 0; fi',
      'echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1',
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  return { slurmd, scontrol };
}

describe('SlurmGpuAllocation', () => {
  it('refresh asks every job named, also while a run want() started (at most 16 jobs) is under way', async () => {
    const t = tools(tmpDir());
    const source = new SlurmGpuAllocation({
      slurmd: { path: t.slurmd },
      scontrol: { path: t.scontrol },
      nodeName: 'allocn2',
      minIntervalMs: 60_000,
      mapIntervalMs: 600_000,
      timeoutMs: 10_000,
      logger: silentLogger(),
      deviceOf: (p) => DEVICES[p],
    });
    try {
      // Twenty jobs Slurm does not know (cgroups it left behind) come first, the node's own two last.
      const stale = Array.from({ length: 20 }, (_, i) => String(7000 + i));
      source.want([...stale, '6000', '6001']);
      await source.refresh();
      const table = source.current();
      expect(table.known).toBe(true);
      expect(table.known && [...table.jobs.keys()].sort()).toEqual(['6000', '6001']);
      expect(table.known && table.jobs.get('6000')).toEqual(['195:3']);
    } finally {
      source.stop();
    }
  });
});
