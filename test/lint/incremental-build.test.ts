/**
 * One compile from a fresh clone to the demo: `npm ci` compiles (prepare), and `npm run demo` and
 * `npm test` build again; in build mode with the compiler's record of its last run
 * (dist/.tsbuildinfo, removed with dist/), that second build finds nothing changed and compiles
 * nothing.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';

const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
const tsconfig = JSON.parse(fs.readFileSync('tsconfig.json', 'utf8')) as {
  compilerOptions: { incremental?: boolean; tsBuildInfoFile?: string; outDir?: string };
};

describe('the build', () => {
  it('compiles in build mode wherever a script compiles (prepare, build), and everything else builds through build', () => {
    expect(pkg.scripts.build).toBe('tsc -b tsconfig.json');
    expect(pkg.scripts.prepare).toBe('tsc -b tsconfig.json');
    const compiling = Object.entries(pkg.scripts).filter(([, s]) => /\btsc\b/.test(s));
    // typecheck writes nothing (--noEmit); its record tells the next build what is left to emit.
    expect(compiling.map(([name]) => name).sort()).toEqual(['build', 'prepare', 'typecheck']);
    for (const name of ['demo', 'test', 'docs', 'bench:node'])
      expect(pkg.scripts[name], name).toMatch(/^npm run build --silent && /);
  });

  it('keeps the record of the last compile under dist/, which git ignores', () => {
    const { incremental, tsBuildInfoFile, outDir } = tsconfig.compilerOptions;
    expect(incremental).toBe(true);
    expect(outDir).toBe('dist');
    expect(tsBuildInfoFile).toMatch(/^dist\/[^/]+$/);
    expect(fs.readFileSync('.gitignore', 'utf8').split('\n')).toContain('dist/');
  });
});
