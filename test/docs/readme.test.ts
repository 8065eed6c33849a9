/**
 * README.md is the front door: short, and showing the commands a newcomer types, the test command
 * exactly as CI runs it, with the Debian packages CI installs for the tests.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';

const readme = fs.readFileSync('README.md', 'utf8');
const ci = fs.readFileSync('.ci/run', 'utf8');

/** The packages of the `apt-get install` command in a shell script (continuation lines joined). */
function aptPackages(script: string): string[] {
  const joined = script.replace(/\\\n/g, ' ');
  const command = /apt-get install([^\n]*)/.exec(joined)?.[1] ?? '';
  return command
    .replace(/>.*$/, '')
    .split(/\s+/)
    .filter((w) => w !== '' && !w.startsWith('-'));
}

describe('README', () => {
  it('shows the test command that .ci/run runs, and the demo command', () => {
    const cmd = /npm ci && npm test/.exec(ci)?.[0];
    expect(cmd).toBeDefined();
    expect(readme).toContain(cmd as string);
    expect(readme).toContain('npm ci && npm run demo');
  });

  it('names every Debian package .ci/run installs for the tests', () => {
    const packages = aptPackages(ci);
    expect(packages).toContain('prometheus');
    const install = aptPackages(readme);
    for (const p of packages) expect(install, p).toContain(p);
  });

  it('stays a front door: at most 250 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
  });
});
