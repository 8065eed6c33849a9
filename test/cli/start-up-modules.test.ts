/**
 * What the single executable loads at start, as its own bundle (scripts/sea/bundle.ts) run as the
 * CommonJS script it is. `https`, `tls` and `crypto` cost every process that loads them several
 * MiB (src/lazy-modules.ts): the node agent with its defaults loads none of them, whatever else
 * the one command carries; a setting that needs TLS loads it.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliBundle } from '../../scripts/sea/bundle.js';
import { demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { rootFlags } from '../support/node-tree.js';
import { freePort, waitFor } from '../support/tools.js';
import { tmpDir } from '../support/tmp.js';

const COSTLY = ['https', 'tls', 'crypto'];
let dir: string;

beforeAll(async () => {
  // Kept for the file's tests (a tmpDir goes after each test).
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-bundle-'));
  fs.writeFileSync(
    path.join(dir, 'slurm-otel.cjs'),
    await cliBundle(`node${process.versions.node.split('.')[0]}`, path.resolve('.')),
  );
  // Node's list of the modules it loaded, written as the process ends.
  fs.writeFileSync(
    path.join(dir, 'loaded.cjs'),
    `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(path.join(dir, 'loaded.json'))}, JSON.stringify(process.moduleLoadList)));\n`,
  );
}, 60_000);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The bundle's command line with the module list written as it ends. */
function argv(args: string[]): string[] {
  return ['-r', path.join(dir, 'loaded.cjs'), path.join(dir, 'slurm-otel.cjs'), ...args];
}

/** Which of COSTLY the last run loaded. */
function loaded(output: string): string[] {
  const file = path.join(dir, 'loaded.json');
  expect(fs.existsSync(file), output).toBe(true);
  const list = JSON.parse(fs.readFileSync(file, 'utf8')) as string[];
  fs.rmSync(file);
  return COSTLY.filter((m) => list.includes(`NativeModule ${m}`));
}

describe("the single executable's bundle at start", () => {
  it('the node agent with its defaults, serving its endpoints, loads neither TLS nor crypto', async () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
    const flags = [
      ...rootFlags(roots),
      '--metrics-bind-address',
      '127.0.0.1:0',
      '--monitoring-bind-address',
      '127.0.0.1:0',
    ];
    const child = spawn(process.execPath, argv(['node', ...flags, '--log-format', 'json']), {
      env: { PATH: process.env.PATH ?? '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await waitFor('the node agent started', () => output.includes('"node agent started"'));
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    expect(loaded(output)).toEqual([]);
  });

  it('an https:// server to read from loads TLS', async () => {
    const url = `https://127.0.0.1:${await freePort()}`;
    const r = spawnSync(
      process.execPath,
      argv(['cluster', '--once', '--cluster-name', 'c', '--slurm-api-server', url, '--request-retries', '0']),
      { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' }, timeout: 30_000 },
    );
    expect(r.stdout).toMatch(/^target_info\{/m);
    expect(loaded(r.stderr)).toEqual(expect.arrayContaining(['https', 'tls']));
  });
});
