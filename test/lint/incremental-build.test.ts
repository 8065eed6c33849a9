/**
 * What the demo needs from a fresh clone to its pages, built once and without type-checking:
 * `npm ci` emits the package's JavaScript file by file (prepare: scripts/transpile.mjs over src/,
 * tsconfig.package.json), and `npm run demo` runs the same again, which finds nothing changed
 * (test/lint/transpile.test.ts proves neither type-checks). `npm test` and the scripts build
 * everything (tsconfig.json: src/, test/, bench/, scripts/) in build mode with the compiler's record
 * of its last run, which type-checks; so does `npm pack` (prepack) for the package alone.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';

const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
interface TsConfig {
  extends?: string;
  include?: string[];
  compilerOptions: { incremental?: boolean; tsBuildInfoFile?: string; outDir?: string; preserveConstEnums?: boolean };
}
const tsconfig = JSON.parse(fs.readFileSync('tsconfig.json', 'utf8')) as TsConfig;
const packageConfig = JSON.parse(fs.readFileSync('tsconfig.package.json', 'utf8')) as TsConfig;

describe('the build', () => {
  it('type-checks in build mode wherever a script compiles, except on the way to the demo', () => {
    // Each then compiles the node agent's fd reader (scripts/native.mjs), which the demo does without.
    expect(pkg.scripts.build).toBe('tsc -b tsconfig.json && node scripts/native.mjs');
    expect(pkg.scripts.prepack).toBe('tsc -b tsconfig.package.json && node scripts/native.mjs');
    const transpile = 'node scripts/transpile.mjs';
    expect(pkg.scripts['build:package']).toBe(transpile);
    expect(pkg.scripts.prepare).toBe(transpile);
    expect(pkg.scripts.demo).toBe(`${transpile} && node dist/src/cli/main.js demo`);
    const compiling = Object.entries(pkg.scripts).filter(([, s]) => /\btsc\b/.test(s));
    // typecheck writes nothing (--noEmit); its record tells the next build what is left to emit.
    expect(compiling.map(([name]) => name).sort()).toEqual(['build', 'prepack', 'typecheck']);
    for (const name of ['test', 'docs', 'bench:node'])
      expect(pkg.scripts[name], name).toMatch(/^npm run build --silent && /);
  });

  it('keeps const enums in their modules, so that file-by-file output and tsc output mix', () => {
    expect(tsconfig.compilerOptions.preserveConstEnums).toBe(true);
  });

  it("npm test's build replaces prepare's output: the JSON scanners read their bytes as numbers", () => {
    // dist/ as `npm test` leaves it (it builds before vitest runs). prepare's file-by-file output
    // reads Byte.Quote from bytes.js; tsc writes 34 /* Byte.Quote */ into the loops.
    const stream = fs.readFileSync('dist/src/json/stream.js', 'utf8');
    expect(stream, 'run npm run build first').toMatch(/\d+ \/\* Byte\.Quote \*\//);
    expect(stream.match(/(?<!\/\* )\bByte\.[A-Z]\w*/g) ?? []).toEqual([]);
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
