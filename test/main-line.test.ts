/**
 * The main line: the Node the single executable embeds is the one CI runs the README's test
 * command on, the one the README tells an older machine to fetch, and the floor the package
 * declares admits it. Each of these names the version in its own file; this test keeps them one.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';

const read = (file: string): string => fs.readFileSync(file, 'utf8');

/** What scripts/node-lines.sh declares: the main line and the other lines its `test` runs. */
function nodeLines(): { main: string; others: string[] } {
  const script = read('scripts/node-lines.sh');
  const main = /^MAIN=(\d+\.\d+\.\d+)$/m.exec(script)?.[1];
  const others = /^LINES=\(([^)]*)\)$/m.exec(script)?.[1];
  if (main === undefined || others === undefined) throw new Error('scripts/node-lines.sh: no MAIN= or LINES=( )');
  return { main, others: others.trim().split(/\s+/) };
}

/** The line of .ci/run that puts a Node first on PATH, and its version. */
function ciPathLine(): { line: string; version: string } {
  const m = /^(PATH="\$\(scripts\/node-lines\.sh install (\d+\.\d+\.\d+)\)\/bin:\$PATH")$/m.exec(read('.ci/run'));
  if (!m) throw new Error('.ci/run puts no scripts/node-lines.sh Node first on PATH');
  return { line: m[1]!, version: m[2]! };
}

const major = (v: string): string => v.split('.')[0]!;

describe('the main line', () => {
  const { main, others } = nodeLines();

  it('is what .ci/run puts first on PATH before the README test command, and not among the other lines', () => {
    const ci = read('.ci/run');
    const { line, version } = ciPathLine();
    expect(version).toBe(main);
    expect(ci.indexOf(line)).toBeLessThan(ci.indexOf('npm ci && npm test'));
    expect(others).not.toContain(main);
    expect(others.length).toBeGreaterThan(0);
  });

  it('is the Node the single executable embeds by default', () => {
    expect(/^const DEFAULT_LINE = '([^']+)';$/m.exec(read('scripts/sea/build.ts'))?.[1]).toBe(main);
  });

  it("is the README's way to a newer Node, word for word as .ci/run does it, above a floor engines declares", () => {
    const readme = read('README.md');
    expect(readme).toContain(ciPathLine().line);
    const pkg = JSON.parse(read('package.json')) as {
      engines: { node: string };
      devDependencies: Record<string, string>;
    };
    const floor = /^>=(\d+\.\d+)$/.exec(pkg.engines.node)?.[1];
    expect(floor, `engines.node is '${pkg.engines.node}'`).toBeDefined();
    expect(readme).toContain(`You need Node ≥ ${floor!}`);
    expect(Number(major(floor!))).toBeLessThanOrEqual(Number(major(main)));
    expect(major(pkg.devDependencies['@types/node'] ?? '')).toBe(major(main));
  });

  it('is the container image', () => {
    expect(/^ARG NODE_IMAGE=node:(\d+)-/m.exec(read('Dockerfile'))?.[1]).toBe(major(main));
  });
});
