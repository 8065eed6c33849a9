// Lint: eslint's and typescript-eslint's recommended rules, two rules with type information (a
// promise nobody awaits or handles, a promise where a callback's result is ignored: each ends as an
// unhandled rejection, which stops an agent), plus the walls between the parts of the shipped code:
// - src/node and src/cluster never import each other (the two agents share only src/telemetry,
//   src/json, src/log.ts, src/child-runner.ts and src/steps.ts; src/cli composes both);
// - src/json (the streaming JSON reader both agents use) imports neither agent;
// - only src/telemetry imports @opentelemetry/* (the rest hands it plain points);
// - only src/cli reads process.env and process.argv (everything else gets options passed in);
// - only the demo command imports src/demo, and only from the module its action loads lazily
//   (src/cli/demo-stack.ts): an agent process never carries the simulator.
// - src/cluster/api/ is layered: json/ imports nothing else in api/, http/ and decode/ only json/
//   (never each other), the top level (the client calls) anything;
// test/, bench/ and scripts/ are not shipped: they may read the environment and import anything.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

const OTEL = {
  group: ['@opentelemetry/*'],
  message: 'Only src/telemetry imports OpenTelemetry; hand it plain points.',
};
const agentWall = (other) => ({
  group: [`**/${other}/*`, `**/${other}`],
  message:
    'src/node and src/cluster never import each other; share code through src/telemetry, src/json, src/log.ts, src/child-runner.ts or src/steps.ts.',
});
const JSON_WALL = {
  group: ['**/node/*', '**/node', '**/cluster/*', '**/cluster', '**/telemetry/*', '**/telemetry'],
  message: 'src/json is the JSON reader both agents share: it imports neither agent (nor telemetry).',
};
const DEMO = {
  group: ['**/demo/*', '**/demo'],
  message: 'Only the demo command loads src/demo (lazily, through src/cli/demo-stack.ts); agents never carry it.',
};
/**
 * A src/cluster/api/<folder>/ file may not import from `folders` or the api/ top level (`../x.js`,
 * `../../api/x.js`): lower folders never import higher ones. It reads specifiers as written, so it
 * knows the folders' own files only; test/lint/api-layers.test.ts resolves every import, at any depth.
 */
const apiLayer = (folder, ...folders) => ({
  regex: `^\\.\\./(?:\\.\\./api/)?(?:${folders.map((f) => `${f}/`).join('|')}|[^./][^/]*$)`,
  message:
    `src/cluster/api/${folder}/ imports only ${folder === 'json' ? 'json/' : `${folder}/ and json/`} ` +
    'within api/: json/ < http/, decode/ < the client calls.',
});
const API_LAYERS = [
  ['json', 'http', 'decode'],
  ['http', 'decode'],
  ['decode', 'http'],
];
const ENV_MESSAGE = 'Only src/cli reads process.env and process.argv; pass options in.';
const ENV_IMPORTS = ['process', 'node:process'].map((name) => ({
  name,
  importNames: ['env', 'argv'],
  message: ENV_MESSAGE,
}));

/** The import rule of one part of src/: no-restricted-imports' options do not merge across entries. */
const imports = (...patterns) => ['error', { paths: ENV_IMPORTS, patterns }];

export default defineConfig(
  { ignores: ['dist/', 'node_modules/', 'fixtures/', 'otel-config/', 'deploy/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      // Prettier wraps code at 120 columns but leaves comments alone; long strings, templates and
      // regular expressions (HTML, help texts) stay whole.
      'max-len': [
        'error',
        { code: 120, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true },
      ],
      // `_`-prefixed names are deliberately unused (callback positions, destructuring out).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    files: ['{src,test,bench,scripts}/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/cli/**'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: ENV_MESSAGE },
        { object: 'process', property: 'argv', message: ENV_MESSAGE },
      ],
      'no-restricted-imports': imports(OTEL, DEMO),
    },
  },
  { files: ['src/demo/**/*.ts'], rules: { 'no-restricted-imports': imports(OTEL) } },
  { files: ['src/cli/**/*.ts'], rules: { 'no-restricted-imports': ['error', { patterns: [OTEL, DEMO] }] } },
  { files: ['src/cli/demo-stack.ts'], rules: { 'no-restricted-imports': ['error', { patterns: [OTEL] }] } },
  { files: ['src/telemetry/**/*.ts'], rules: { 'no-restricted-imports': imports(DEMO) } },
  { files: ['src/node/**/*.ts'], rules: { 'no-restricted-imports': imports(OTEL, agentWall('cluster'), DEMO) } },
  { files: ['src/cluster/**/*.ts'], rules: { 'no-restricted-imports': imports(OTEL, agentWall('node'), DEMO) } },
  { files: ['src/json/**/*.ts'], rules: { 'no-restricted-imports': imports(OTEL, JSON_WALL, DEMO) } },
  ...API_LAYERS.map(([folder, ...above]) => ({
    files: [`src/cluster/api/${folder}/**/*.ts`],
    rules: { 'no-restricted-imports': imports(OTEL, agentWall('node'), DEMO, apiLayer(folder, ...above)) },
  })),
);
