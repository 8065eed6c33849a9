/**
 * An agent process never loads the simulator (src/demo): the lint wall forbids the static import,
 * this test checks what a real process loads. The built command runs with a module loader hook
 * (node --import; module.registerHooks) that appends every module
 * URL the ES loader loads to a file; the agents' code is ES modules only, so every module of
 * dist/src it runs passes through it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEMO_NODE, demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { DEMO_NODE_NAME } from '../../src/cli/demo.js';
import { tmpDir } from '../support/tmp.js';
import { treeFlags } from '../support/node-tree.js';

const DIST = path.resolve('dist/src');
const BIN = path.join(DIST, 'cli/main.js');

/**
 * The module that registers the recorder: module.registerHooks (a synchronous hook in the main
 * thread), which every Node the package admits (engines: >= 22.15) has; not module.register,
 * which Node 26 warns is deprecated (DEP0205), and the tests want an agent's stderr empty.
 */
function writeRecorder(dir: string, record: string): string {
  const register = path.join(dir, 'register.mjs');
  fs.writeFileSync(
    register,
    [
      "import { appendFileSync } from 'node:fs';",
      "import { registerHooks } from 'node:module';",
      'registerHooks({',
      '  load(url, context, next) {',
      `    appendFileSync(${JSON.stringify(record)}, url + '\\n');`,
      '    return next(url, context);',
      '  },',
      '});',
    ].join('\n'),
  );
  return register;
}

/** Runs node with the recorder and `args`; the modules of dist/src it loaded, relative to it. */
function loadedModules(args: string[]): { status: number | null; stderr: string; modules: string[] } {
  const dir = tmpDir();
  const record = path.join(dir, 'loaded.txt');
  fs.writeFileSync(record, '');
  const r = spawnSync(process.execPath, ['--import', writeRecorder(dir, record), ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '' },
    timeout: 30_000,
  });
  const prefix = `${pathToFileURL(DIST).href}/`;
  const modules = fs
    .readFileSync(record, 'utf8')
    .split('\n')
    .filter((url) => url.startsWith(prefix))
    .map((url) => url.slice(prefix.length));
  return { status: r.status, stderr: r.stderr, modules };
}

const demoModules = (modules: string[]): string[] =>
  modules.filter((m) => m.startsWith('demo/') || m === 'cli/demo-stack.js');

describe('agent processes do not load the simulator', () => {
  it('the recorder sees a module of src/demo when one is loaded (the check can fail)', () => {
    const stack = pathToFileURL(path.join(DIST, 'cli/demo-stack.js')).href;
    const r = loadedModules(['--input-type=module', '-e', `await import(${JSON.stringify(stack)});`]);
    expect(r.stderr).toBe('');
    expect(r.modules).toContain('demo/fake-cluster.js');
    expect(r.modules).toContain('cli/demo-stack.js');
  });

  it('slurm-otel node --once loads the node agent and nothing of src/demo', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
    const r = loadedModules([BIN, 'node', '--once', ...treeFlags(roots), '--log-level', 'error']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.modules).toContain('node/agent.js');
    expect(r.modules).toContain('cli/demo.js');
    expect(demoModules(r.modules)).toEqual([]);
  });

  it('slurm-otel cluster --once loads the cluster agent and nothing of src/demo', () => {
    // Nothing listens on port 1 of loopback: the collection fails at once, after every module loaded.
    const r = loadedModules([
      BIN,
      'cluster',
      '--once',
      '--cluster-name',
      'c',
      '--slurm-api-server',
      'http://127.0.0.1:1',
      '--request-retries',
      '0',
      '--log-level',
      'error',
    ]);
    expect(r.status).toBe(1);
    expect(r.modules).toContain('cluster/agent.js');
    expect(demoModules(r.modules)).toEqual([]);
  });

  it("the demo command's default node name is the synthetic node's", () => {
    expect(DEMO_NODE_NAME).toBe(DEMO_NODE);
  });
});
