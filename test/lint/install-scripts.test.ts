/**
 * npm (11 and later) warns at every `npm ci` about each dependency whose install script no
 * `allowScripts` entry in package.json covers. Each locked package that has one is covered here,
 * by name, allowed (true) or denied (false): a new one is decided on when it arrives, and the
 * newcomer's first `npm ci` opens without a warning.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';

interface Locked {
  readonly hasInstallScript?: boolean;
  readonly name?: string;
}

const lock = JSON.parse(fs.readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, Locked> };
const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { allowScripts?: Record<string, boolean> };

/** `node_modules/a/node_modules/@s/b` → `@s/b` (or the name an alias entry records). */
function nameOf(path: string, entry: Locked): string {
  return entry.name ?? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
}

describe('install scripts of the dependencies', () => {
  const withScripts = Object.entries(lock.packages)
    .filter(([path, e]) => path !== '' && e.hasInstallScript === true)
    .map(([path, e]) => nameOf(path, e));

  it('the lock file names some (the check can fail)', () => {
    expect(withScripts).toContain('esbuild');
  });

  it('each is allowed or denied in package.json allowScripts', () => {
    const policy = pkg.allowScripts ?? {};
    expect(withScripts.filter((name) => typeof policy[name] !== 'boolean')).toEqual([]);
  });

  it('the policy names no package the lock file does not have', () => {
    expect(Object.keys(pkg.allowScripts ?? {}).filter((name) => !withScripts.includes(name))).toEqual([]);
  });
});
