/** `explain --json` is inert on a terminal: C1 controls and bidi overrides of process names are escaped. */
import { describe, expect, it } from 'vitest';
import { demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { tmpDir } from '../support/tmp.js';
import { canMakeDeviceNodes, explainCli, renameProcess } from '../support/node-tree.js';

describe.runIf(canMakeDeviceNodes('explain --json on a synthetic node'))('slurm-otel explain --json', () => {
  it('escapes C1 controls (U+009B CSI), DEL and bidi overrides, and parses back to the same name', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: true }));
    const name = 'we\u009b2Jka\u007f\u0085\u202e';
    renameProcess(roots.procfs, 950, name);
    const r = explainCli(roots, '--json');
    expect(r.status).toBe(0);
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    expect(r.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    expect(r.stdout).toContain('we\\u009b2Jka\\u007f\\u0085\\u202e');
    const out = JSON.parse(r.stdout) as { ports: { nonJob: { comm: string }[] }[] };
    expect(out.ports.flatMap((p) => p.nonJob.map((h) => h.comm))).toContain(name);
  });
});
