/**
 * The node agent's whole exposition on a fixed tree (the demo node, with fixed counter values),
 * compared with a committed file: any change to a family, label, value or HELP text shows up as a
 * diff to review. `UPDATE=1 npx vitest run test/golden` rewrites the file after an intended change.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { DEMO_NODE, demoTree } from '../../src/demo/scenarios.js';
import { writeCounters, writeTree } from '../../src/demo/nodetree.js';
import { expositionKeyErrors } from '../support/catalogue-keys.js';
import { parseExposition } from '../support/exposition.js';
import { tmpDir } from '../support/tmp.js';
import { canMakeDeviceNodes, treeFlags } from '../support/node-tree.js';

const BIN = path.resolve('dist/src/cli/main.js');
const GOLDEN = path.resolve('test/golden/node-once.prom');

/** Raw sysfs values, distinct per device and counter so a value attributed to the wrong series shows. */
function writeFixedCounters(sysfs: string): void {
  ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'].forEach((device, i) => {
    const base = (i + 1) * 1_000_000;
    writeCounters(
      sysfs,
      device,
      1,
      { port_xmit_data: base + 1, port_rcv_data: base + 2, port_xmit_packets: base + 3, symbol_error: i },
      'counters',
    );
    writeCounters(sysfs, device, 1, { packet_seq_err: 10 * i, np_cnp_sent: 10 * i + 1 }, 'hw_counters');
  });
}

/**
 * The exposition with what differs between machines and releases replaced, and the samples of each
 * family sorted: their order follows directory listing order, which the filesystem decides.
 */
function normalize(text: string): string {
  const out: string[] = [];
  let samples: string[] = [];
  const flush = (): void => {
    out.push(...samples.sort());
    samples = [];
  };
  for (const line of text.replace(/service_version="[^"]*"/g, 'service_version="VERSION"').split('\n')) {
    if (line.startsWith('#')) {
      flush();
      out.push(line);
    } else if (line !== '') samples.push(line);
  }
  flush();
  return `${out.join('\n')}\n`;
}

describe.runIf(canMakeDeviceNodes('the node golden file'))('node agent exposition (golden file)', () => {
  it('--once on the demo node with fixed counters prints exactly test/golden/node-once.prom', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: true }));
    writeFixedCounters(roots.sysfs);
    const args = ['node', '--once', '--node-name', DEMO_NODE, ...treeFlags(roots), '--log-level', 'error'];
    const r = spawnSync(process.execPath, [BIN, ...args], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '' },
      timeout: 20_000,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(expositionKeyErrors(parseExposition(r.stdout))).toEqual([]);
    const actual = normalize(r.stdout);
    if (process.env.UPDATE === '1') fs.writeFileSync(GOLDEN, actual);
    expect(actual).toBe(fs.readFileSync(GOLDEN, 'utf8'));
  });
});
