/**
 * scripts/node-lines.sh runs the tests on another Node (SLURM_OTEL_NODE_LINE names it): the test
 * workers must be that Node, and so must what they start (the agents run as process.execPath; a
 * `node` found on PATH too), or a line would pass while the machine's own Node did the work.
 * The package's `engines` range must admit the Node the tests run on, and CI runs everything else
 * on the main line (.ci/run puts scripts/node-lines.sh's MAIN first on PATH), whatever the machine's.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const line = process.env.SLURM_OTEL_NODE_LINE;

function versionOf(node: string): string {
  const r = spawnSync(node, ['-p', 'process.version'], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.trim();
}

/** Whether `version` (vX.Y.Z) satisfies the `>=X.Y` range the package declares. */
function admits(range: string, version: string): boolean {
  const m = /^>=(\d+)\.(\d+)$/.exec(range);
  if (!m) throw new Error(`engines.node is '${range}': this test reads only the '>=X.Y' form`);
  const v = /^v(\d+)\.(\d+)\./.exec(version);
  if (!v) throw new Error(`'${version}' is not a Node version`);
  const [major, minor, wantMajor, wantMinor] = [v[1], v[2], m[1], m[2]].map(Number) as [number, number, number, number];
  return major > wantMajor || (major === wantMajor && minor >= wantMinor);
}

describe('the Node the tests run on', () => {
  it.runIf(line !== undefined)(
    'is the line scripts/node-lines.sh asked for, in the workers and what they spawn',
    () => {
      expect(process.version).toBe(`v${line}`);
      expect(versionOf(process.execPath)).toBe(`v${line}`);
      expect(versionOf('node')).toBe(`v${line}`);
    },
  );

  it.runIf(line === undefined && process.env.CI === 'true')('is the main line when CI runs the whole suite', () => {
    const main = /^MAIN=(\S+)$/m.exec(readFileSync('scripts/node-lines.sh', 'utf8'))?.[1];
    expect(main).toBeDefined();
    expect(process.version).toBe(`v${main!}`);
    expect(versionOf('node')).toBe(`v${main!}`);
  });

  it('is one that package.json engines admits', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } };
    expect(admits(pkg.engines.node, process.version), `${process.version} vs ${pkg.engines.node}`).toBe(true);
  });
});
