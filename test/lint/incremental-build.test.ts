/**
 * One compile of what the demo needs from a fresh clone to its pages: `npm ci` compiles the package
 * alone (prepare: src/, tsconfig.package.json), and `npm run demo` builds the same again; in build
 * mode with the compiler's record of its last run (dist/.tsbuildinfo-package, removed with dist/),
 * that second build finds nothing changed. `npm test` and the scripts build everything
 * (tsconfig.json: src/, test/, bench/, scripts/) with a record of their own.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';

const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
interface TsConfig {
  extends?: string;
  include?: string[];
  compilerOptions: { incremental?: boolean; tsBuildInfoFile?: string; outDir?: string };
}
const tsconfig = JSON.parse(fs.readFileSync('tsconfig.json', 'utf8')) as TsConfig;
const packageConfig = JSON.parse(fs.readFileSync('tsconfig.package.json', 'utf8')) as TsConfig;

describe('the build', () => {
  it('compiles in build mode wherever a script compiles, the package alone for npm ci and the demo', () => {
    expect(pkg.scripts.build).toBe('tsc -b tsconfig.json');
    expect(pkg.scripts['build:package']).toBe('tsc -b tsconfig.package.json');
    expect(pkg.scripts.prepare).toBe('tsc -b tsconfig.package.json');
    const compiling = Object.entries(pkg.scripts).filter(([, s]) => /\btsc\b/.test(s));
    // typecheck writes nothing (--noEmit); its record tells the next build what is left to emit.
    expect(compiling.map(([name]) => name).sort()).toEqual(['build', 'build:package', 'prepare', 'typecheck']);
    expect(pkg.scripts.demo).toMatch(/^npm run build:package --silent && /);
    for (const name of ['test', 'docs', 'bench:node'])
      expect(pkg.scripts[name], name).toMatch(/^npm run build --silent && /);
  });

  it('the package config is the main one narrowed to src/, with its own record', () => {
    expect(packageConfig.extends).toBe('./tsconfig.json');
    expect(packageConfig.include).toEqual(['src']);
    expect(tsconfig.include).toEqual(expect.arrayContaining(['src', 'test', 'bench', 'scripts']));
    expect(packageConfig.compilerOptions.tsBuildInfoFile).toMatch(/^dist\/[^/]+$/);
    expect(packageConfig.compilerOptions.tsBuildInfoFile).not.toBe(tsconfig.compilerOptions.tsBuildInfoFile);
  });

  it('keeps the record of the last compile under dist/, which git ignores', () => {
    const { incremental, tsBuildInfoFile, outDir } = tsconfig.compilerOptions;
    expect(incremental).toBe(true);
    expect(outDir).toBe('dist');
    expect(tsBuildInfoFile).toMatch(/^dist\/[^/]+$/);
    expect(fs.readFileSync('.gitignore', 'utf8').split('\n')).toContain('dist/');
  });
});
