/**
 * README.md is the front door: short, and showing the commands a newcomer types, the test command
 * exactly as CI runs it, the install, the ports to scrape and a few lines of what a scrape shows,
 * each as the code has it. What CI installs for the tests is CONTRIBUTING.md's, and only there.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { documentedCommands } from '../../src/cli/program.js';

const readme = fs.readFileSync('README.md', 'utf8');
const ci = fs.readFileSync('.ci/run', 'utf8');
const contributing = fs.readFileSync('CONTRIBUTING.md', 'utf8');
/** CONTRIBUTING.md's "Prerequisites" section, up to the next section of its level. */
const prerequisites = contributing.slice(
  contributing.indexOf('\n## Prerequisites\n'),
  contributing.indexOf('\n## ', contributing.indexOf('\n## Prerequisites\n') + 1),
);

/** The packages of every `apt-get install` command in a shell script (continuation lines joined). */
function aptPackages(script: string): string[] {
  const joined = script.replace(/\\\n/g, ' ');
  return [...joined.matchAll(/apt-get install([^\n]*)/g)].flatMap((m) =>
    m[1]!
      .replace(/>.*$/, '')
      .split(/\s+/)
      .filter((w) => w !== '' && !w.startsWith('-')),
  );
}

describe('README', () => {
  it('shows the test command that .ci/run runs, and the demo command', () => {
    const cmd = /npm ci && npm test/.exec(ci)?.[0];
    expect(cmd).toBeDefined();
    expect(readme).toContain(cmd as string);
    expect(readme).toContain('npm ci && npm run demo');
  });

  it('leaves the prerequisites to CONTRIBUTING.md, whose install command names every package .ci/run installs', () => {
    expect(aptPackages(readme)).toEqual([]);
    expect(readme).toContain('(CONTRIBUTING.md#prerequisites)');
    const packages = aptPackages(ci);
    expect(packages).toContain('prometheus');
    expect(packages).toContain('qemu-system-x86');
    const install = aptPackages(prerequisites);
    for (const p of packages) expect(install, p).toContain(p);
  });

  it("is matched by CONTRIBUTING's package table, one row per package .ci/run installs", () => {
    const table = prerequisites.slice(prerequisites.indexOf('### Debian packages'));
    const listed = new Set([...table.matchAll(/^\| `([^`]+)` \|/gm)].flatMap((m) => m[1]!.split(' ')));
    for (const p of aptPackages(ci)) expect(listed.has(p), p).toBe(true);
  });

  it('stays a front door: at most 80 lines', () => {
    expect(readme.trimEnd().split('\n').length).toBeLessThanOrEqual(80);
  });

  it.each([
    ['node', 'test/golden/node-once.prom'],
    ['cluster', 'test/golden/cluster-once.prom'],
  ])('shows lines of the %s exposition exactly as the agent writes them (%s)', (agent, golden) => {
    const block = new RegExp(`<!-- begin:scrape-example ${agent} -->\\n\`\`\`\\n([^]*?)\`\`\`\\n<!-- end:`).exec(
      readme,
    );
    expect(block, `README's scrape-example ${agent} block`).not.toBeNull();
    const lines = block![1]!.trim().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(3);
    const exposition = new Set(fs.readFileSync(golden, 'utf8').split('\n'));
    for (const line of lines) expect(exposition.has(line), line).toBe(true);
  });

  it('lists the ports each agent listens on by default', () => {
    const bind = (cmd: Command, flag: string): string =>
      String(cmd.options.find((o) => o.long === flag)?.defaultValueDescription ?? '');
    const commands = documentedCommands({});
    for (const [agent, key] of [
      ['node', 'node-options'],
      ['cluster', 'cluster-options'],
    ] as const) {
      const cmd = commands[key]!;
      const row = readme.split('\n').find((l) => l.startsWith(`| ${agent} (`));
      expect(row, agent).toBeDefined();
      expect(row).toContain(`\`${bind(cmd, '--metrics-bind-address')}\``);
      expect(row).toContain(`\`${bind(cmd, '--monitoring-bind-address')}\``);
    }
  });

  it('packs the command and its configs, nothing of the tests', () => {
    const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const [pack] = JSON.parse(r.stdout) as [{ files: { path: string }[] }];
    const files = pack.files.map((f) => f.path);
    const bin = (JSON.parse(fs.readFileSync('package.json', 'utf8')) as { bin: Record<string, string> }).bin;
    expect(files).toContain(bin['slurm-otel']);
    expect(files).toContain('otel-config/collector-agent.yaml');
    expect(files.filter((f) => f.startsWith('test/') || f.startsWith('dist/test/') || f.startsWith('src/'))).toEqual(
      [],
    );
  });
});
