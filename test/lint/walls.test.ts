/**
 * The walls between the parts of src/ are lint rules (eslint.config.js): each is shown to fire on
 * code that breaks it, and to stay quiet where the code is allowed.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// The snippets are files that do not exist: the type-aware rules, which need them in the project,
// are left out (the walls are syntax).
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfig: {
    languageOptions: { parserOptions: { projectService: false } },
    rules: { '@typescript-eslint/no-floating-promises': 'off', '@typescript-eslint/no-misused-promises': 'off' },
  },
});

/** The rules that fire on `code` as if it were the file at `file` (relative to the repository). */
async function firing(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${code}\nexport {};\n`, { filePath: path.join(ROOT, file) });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

describe('lint walls', () => {
  it.each([
    ['src/node/x.ts', "import { CLUSTER_METRICS } from '../cluster/metrics.js';\nvoid CLUSTER_METRICS;"],
    ['src/node/deep/x.ts', "import type { SlurmNode } from '../../cluster/model.js';\nexport type N = SlurmNode;"],
    ['src/cluster/x.ts', "import { NODE_METRICS } from '../node/metrics.js';\nvoid NODE_METRICS;"],
    ['src/cluster/api/x.ts', "import { classify } from '../../node/read/roots.js';\nvoid classify;"],
  ])('src/node and src/cluster never import each other: %s', async (file, code) => {
    expect(await firing(file, code)).toEqual(['no-restricted-imports']);
  });

  it.each([
    ['src/json/x.ts', "import { counterReader } from '../node/qp/qp-parse.js';\nvoid counterReader;"],
    ['src/json/x.ts', "import type { Read } from '../node/read/roots.js';\nexport type R = Read;"],
    ['src/json/x.ts', "import { field } from '../cluster/api/json/read.js';\nvoid field;"],
    ['src/json/x.ts', "import { Pipeline } from '../telemetry/pipeline.js';\nvoid Pipeline;"],
  ])('src/json imports neither agent: %s', async (file, code) => {
    expect(await firing(file, code)).toEqual(['no-restricted-imports']);
  });

  it.each([
    ['src/json/x.ts', "import { JsonStream } from './stream.js';\nvoid JsonStream;"],
    ['src/json/x.ts', "import { StringDecoder } from 'node:string_decoder';\nvoid StringDecoder;"],
    ['src/node/qp/x.ts', "import { entryStream } from '../../json/entries.js';\nvoid entryStream;"],
    [
      'src/cluster/api/decode/x.ts',
      "import { JsonArraySplitter } from '../../../json/splitter.js';\nvoid JsonArraySplitter;",
    ],
  ])('both agents share src/json: %s', async (file, code) => {
    expect(await firing(file, code)).toEqual([]);
  });

  it.each(['src/node/x.ts', 'src/cluster/x.ts', 'src/cli/x.ts', 'src/demo/x.ts', 'src/x.ts'])(
    'only src/telemetry imports @opentelemetry/*: %s',
    async (file) => {
      expect(await firing(file, "import { metrics } from '@opentelemetry/api';\nvoid metrics;")).toEqual([
        'no-restricted-imports',
      ]);
      expect(await firing(file, "import type { Meter } from '@opentelemetry/api';\nexport type M = Meter;")).toEqual([
        'no-restricted-imports',
      ]);
    },
  );

  it.each([
    ['process.env', 'void process.env.HOME;', 'no-restricted-properties'],
    ['process.argv', 'void process.argv[2];', 'no-restricted-properties'],
    ['destructured from process', 'const { env } = process;\nvoid env;', 'no-restricted-properties'],
    ['imported from node:process', "import { argv } from 'node:process';\nvoid argv;", 'no-restricted-imports'],
  ])('only src/cli reads the environment: %s', async (_what, code, rule) => {
    for (const file of ['src/node/x.ts', 'src/cluster/api/x.ts', 'src/telemetry/x.ts', 'src/demo/x.ts', 'src/log.ts']) {
      expect(await firing(file, code), file).toEqual([rule]);
    }
    for (const file of ['src/cli/x.ts', 'test/x.ts', 'bench/x.ts', 'scripts/x.ts'])
      expect(await firing(file, code), file).toEqual([]);
  });

  it.each([
    ['src/cli/x.ts', "import { FakeCluster } from '../demo/fake-cluster.js';\nvoid FakeCluster;"],
    ['src/cli/program.ts', "import type { TreeLayout } from '../demo/nodetree.js';\nexport type L = TreeLayout;"],
    ['src/node/x.ts', "import { writeTree } from '../demo/nodetree.js';\nvoid writeTree;"],
    ['src/cluster/api/x.ts', "import { FakeCluster } from '../../demo/fake-cluster.js';\nvoid FakeCluster;"],
    ['src/telemetry/x.ts', "import { Prng } from '../demo/prng.js';\nvoid Prng;"],
    ['src/x.ts', "export { DEMO_NODE } from './demo/scenarios.js';"],
  ])('only the demo command imports src/demo: %s', async (file, code) => {
    expect(await firing(file, code)).toEqual(['no-restricted-imports']);
  });

  it.each([
    ['src/cli/demo-stack.ts', "import { FakeCluster } from '../demo/fake-cluster.js';\nvoid FakeCluster;"],
    ['src/demo/x.ts', "import { FakeCluster } from './fake-cluster.js';\nvoid FakeCluster;"],
    ['test/x.ts', "import { FakeCluster } from '../src/demo/fake-cluster.js';\nvoid FakeCluster;"],
    ['bench/x.ts', "import { FakeCluster } from '../src/demo/fake-cluster.js';\nvoid FakeCluster;"],
    ['scripts/x.ts', "import { FakeCluster } from '../src/demo/fake-cluster.js';\nvoid FakeCluster;"],
    // The demo command itself loads the stack lazily; a dynamic import is not a static edge.
    ['src/cli/demo.ts', "export const load = () => import('./demo-stack.js');"],
  ])('src/demo stays open to the demo stack, tests, benchmarks and scripts: %s', async (file, code) => {
    expect(await firing(file, code)).toEqual([]);
  });

  it.each([
    ['src/cluster/api/json/x.ts', "import { parseServer } from '../http/transport.js';\nvoid parseServer;"],
    ['src/cluster/api/json/x.ts', "import { decodeDiag } from '../decode/common.js';\nvoid decodeDiag;"],
    ['src/cluster/api/json/x.ts', "import { SlurmClient } from '../client.js';\nvoid SlurmClient;"],
    ['src/cluster/api/http/x.ts', "import { readMeta } from '../decode/envelope.js';\nvoid readMeta;"],
    ['src/cluster/api/http/x.ts', "import { toFailure } from '../failures.js';\nvoid toFailure;"],
    ['src/cluster/api/decode/x.ts', "import { readText } from '../http/transport.js';\nvoid readText;"],
    ['src/cluster/api/decode/x.ts', "import { ENDPOINTS } from '../paths.js';\nvoid ENDPOINTS;"],
    ['src/cluster/api/decode/x.ts', "import { ENDPOINTS } from '../../api/paths.js';\nvoid ENDPOINTS;"],
  ])('src/cluster/api/ folders never import upwards: %s %s', async (file, code) => {
    expect(await firing(file, code)).toEqual(['no-restricted-imports']);
  });

  it.each([
    ['src/cluster/api/json/x.ts', "import { field } from './read.js';\nvoid field;"],
    ['src/cluster/api/http/x.ts', "import { field } from '../json/read.js';\nvoid field;"],
    ['src/cluster/api/http/x.ts', "import { createLogger } from '../../../log.js';\nvoid createLogger;"],
    ['src/cluster/api/decode/x.ts', "import { parseSlurmJson } from '../json/slurm-json.js';\nvoid parseSlurmJson;"],
    ['src/cluster/api/decode/x.ts', "import type { SlurmNode } from '../../model.js';\nexport type N = SlurmNode;"],
    ['src/cluster/api/x.ts', "import { readText } from './http/transport.js';\nvoid readText;"],
    ['src/cluster/api/x.ts', "import { readMeta } from './decode/envelope.js';\nvoid readMeta;"],
  ])('src/cluster/api/ folders import downwards and outside api/: %s %s', async (file, code) => {
    expect(await firing(file, code)).toEqual([]);
  });

  it('allows what the walls leave open', async () => {
    expect(await firing('src/telemetry/x.ts', "import { metrics } from '@opentelemetry/api';\nvoid metrics;")).toEqual(
      [],
    );
    expect(
      await firing(
        'src/node/x.ts',
        "import { createLogger } from '../log.js';\nimport { Pipeline } from '../telemetry/pipeline.js';\nvoid createLogger;\nvoid Pipeline;",
      ),
    ).toEqual([]);
    expect(
      await firing(
        'src/demo/x.ts',
        "import { NODE_METRICS } from '../node/metrics.js';\nimport { CLUSTER_METRICS } from '../cluster/metrics.js';\nvoid [NODE_METRICS, CLUSTER_METRICS];",
      ),
    ).toEqual([]);
    expect(
      await firing(
        'test/x.ts',
        "import { metrics } from '@opentelemetry/api';\nimport { NODE_METRICS } from '../src/node/metrics.js';\nvoid [metrics, NODE_METRICS];",
      ),
    ).toEqual([]);
    expect(await firing('src/node/x.ts', "import { hrtime } from 'node:process';\nvoid hrtime;")).toEqual([]);
  });
});
