/** `explain --json` is inert on a terminal: C1 controls and bidi overrides of process names are escaped. */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { tmpDir } from '../support/tmp.js';

const BIN = path.resolve('dist/src/cli/main.js');

describe('slurm-otel explain --json', () => {
  it('escapes C1 controls (U+009B CSI), DEL and bidi overrides, and parses back to the same name', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: true }));
    const name = 'we\u009b2Jka\u007f\u0085\u202e';
    fs.writeFileSync(path.join(roots.procfs, '950', 'comm'), `${name}\n`);
    const stat = path.join(roots.procfs, '950', 'stat');
    const old = fs.readFileSync(stat, 'utf8');
    fs.writeFileSync(stat, `${old.slice(0, old.indexOf('(') + 1)}${name}${old.slice(old.lastIndexOf(')'))}`);
    const r = spawnSync(
      process.execPath,
      [
        BIN,
        'explain',
        '--json',
        '--sysfs-root',
        roots.sysfs,
        '--procfs-root',
        roots.procfs,
        '--cgroup-root',
        roots.cgroupfs,
      ],
      { encoding: 'utf8' },
    );
    expect(r.status).toBe(0);
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    expect(r.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    expect(r.stdout).toContain('we\\u009b2Jka\\u007f\\u0085\\u202e');
    const out = JSON.parse(r.stdout) as { ports: { nonJob: { comm: string }[] }[] };
    expect(out.ports.flatMap((p) => p.nonJob.map((h) => h.comm))).toContain(name);
  });
});
