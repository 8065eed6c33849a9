/**
 * The single executable's bundle (scripts/sea/bundle.ts) depends on the checkout alone: built from
 * another working directory it is the same text, so an executable built from a script, a CI job
 * or a shell elsewhere is the one built from the checkout, and names no directory of the machine
 * that built it.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cliBundle } from '../../scripts/sea/bundle.js';
import { tmpDir } from '../support/tmp.js';

const ROOT = path.resolve('.');
const TARGET = `node${process.versions.node.split('.')[0]}`;

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The bundle made by the compiled script in a child whose working directory is `cwd`: its hash. */
function bundleHashFrom(cwd: string): string {
  const script = pathToFileURL(path.join(ROOT, 'dist/scripts/sea/bundle.js')).href;
  const code =
    `const { createHash } = await import('node:crypto');` +
    `const { cliBundle } = await import(${JSON.stringify(script)});` +
    `const text = await cliBundle(${JSON.stringify(TARGET)}, ${JSON.stringify(ROOT)});` +
    `process.stdout.write(createHash('sha256').update(text).digest('hex'));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { cwd, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

describe("the single executable's bundle", () => {
  it('is the same whatever directory it is built from, and names none of the builder', async () => {
    const here = await cliBundle(TARGET, ROOT);
    const elsewhere = tmpDir();
    expect(bundleHashFrom(elsewhere)).toBe(sha256(here));
    expect(bundleHashFrom(ROOT)).toBe(sha256(here));
    expect(here).not.toContain(ROOT);
  }, 120_000);
});
