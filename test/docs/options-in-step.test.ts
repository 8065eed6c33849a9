/**
 * The pages and the options stay in step: every command has its generated options table in
 * docs/configuration.md (tables.test.ts keeps each table exact), and every `--option` a page
 * names in code is one that exists: an option of a slurm-otel command, of a benchmark, or of
 * another tool listed here with the tool it belongs to.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { documentedCommands, program } from '../../src/cli/program.js';

/** Options of other tools the pages name, each with its tool. */
const OTHER_TOOLS: Readonly<Record<string, string>> = {
  '--build': 'docker compose up',
  '--variant': 'debootstrap',
  '--expose-gc': 'node',
  '--no-experimental-websocket': 'node',
  '--max-semi-space-size': 'node (V8)',
  '--max-old-space-size': 'node (V8)',
  '--single-threaded': 'node (V8)',
  '--optimize-for-size': 'node (V8)',
  '--max-opt': 'node (V8)',
  '--no-turbofan': 'node (V8)',
  '--maglev-inline-api-calls': 'node (V8)',
  '--lite-mode': 'node (V8)',
  '--memory-saver-mode': 'node (V8)',
  '--heap-growing-percent': 'node (V8)',
  '--no-flush-bytecode': 'node (V8)',
  '--nodelist': 'squeue',
  '--ntasks': 'sbatch',
  '--cpus-per-task': 'sbatch',
  '--mem': 'sbatch',
  '--mem-per-cpu': 'sbatch',
  '--format': 'sacct and sstat',
  '--cache': 'npm ci',
  '--ignore-scripts': 'npm ci',
  '--noCheck': 'tsc',
  '--collect.fullslurm': "another Slurm exporter's",
  '--collect.username': "another Slurm exporter's",
  '--collector.slurm.psi-metrics': "another Slurm exporter's",
  '--collector.slurm.swap-memory-metrics': "another Slurm exporter's",
  '--path.slurmstepd.scope': "another Slurm exporter's",
};

const PAGES = [
  'README.md',
  'CONTRIBUTING.md',
  ...fs
    .readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join('docs', f)),
];

const commands = program({}).commands;
const ours = new Set(['--help', '--version', ...commands.flatMap((c) => c.options.map((o) => o.long ?? ''))]);
const benchSources = fs
  .readdirSync('bench')
  .filter((f) => f.endsWith('.ts'))
  .map((f) => fs.readFileSync(path.join('bench', f), 'utf8'))
  .join('\n');

/** Every `--option` inside a code span of the page, with the span it is in. */
function namedOptions(text: string): { option: string; span: string }[] {
  const out: { option: string; span: string }[] = [];
  for (const span of text.matchAll(/`([^`\n]+)`/g))
    for (const m of (span[1] as string).matchAll(/(?<![\w-])--[a-z][a-zA-Z0-9.-]*[a-zA-Z0-9*]|--[a-z]+-\*/g))
      out.push({ option: m[0], span: span[1] as string });
  return out;
}

function exists(option: string): boolean {
  if (option.endsWith('*')) return [...ours].some((o) => o.startsWith(option.slice(0, -1)));
  return ours.has(option) || OTHER_TOOLS[option] !== undefined || benchSources.includes(`'${option}'`);
}

describe('options and pages', () => {
  it('every command has its options table', () => {
    const tables = Object.keys(documentedCommands({}));
    expect(commands.map((c) => `${c.name()}-options`).sort()).toEqual(tables.sort());
    const configuration = fs.readFileSync('docs/configuration.md', 'utf8');
    for (const key of tables) expect(configuration, key).toContain(`<!-- begin:${key} -->`);
  });

  it('no page names an option that does not exist', () => {
    const unknown = PAGES.flatMap((page) =>
      namedOptions(fs.readFileSync(page, 'utf8'))
        .filter(({ option }) => !exists(option))
        .map(({ option, span }) => `${page}: ${option} in \`${span}\``),
    );
    expect(unknown).toEqual([]);
  });

  it('the check finds options in code, and would catch one that does not exist', () => {
    const found = namedOptions('run `slurm-otel node --sysfs-root /x --no-such-flag` or `--otlp-*`, not --bare');
    expect(found.map((f) => f.option)).toEqual(['--sysfs-root', '--no-such-flag', '--otlp-*']);
    expect(found.map((f) => exists(f.option))).toEqual([true, false, true]);
  });

  it('lists no other tool whose option a page does not name', () => {
    const named = new Set(PAGES.flatMap((page) => namedOptions(fs.readFileSync(page, 'utf8')).map((f) => f.option)));
    expect(Object.keys(OTHER_TOOLS).filter((o) => !named.has(o))).toEqual([]);
  });
});
