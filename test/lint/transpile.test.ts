/**
 * The way from a fresh clone to the demo emits JavaScript without type-checking
 * (scripts/transpile.mjs, run by `prepare` and `npm run demo`), while `npm test` and `npm run
 * build` still check every type with `tsc -b`. Two proofs: the commands package.json runs for
 * prepare and the demo emit a project with a type error that the build command rejects (so they
 * fail here if they type-check again); and the whole of src/, emitted file by file, loads: every
 * import of every module names something its target exports.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = process.cwd();
const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
const BIN = path.join(ROOT, 'node_modules', '.bin');

// Under the repository (.tmp/ is ignored by git), so that the emitted modules and the copied
// script find the repository's node_modules.
fs.mkdirSync(path.join(ROOT, '.tmp'), { recursive: true });
const scratch = fs.mkdtempSync(path.join(ROOT, '.tmp', 'transpile-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

/** Runs one package.json command line in `dir` as npm would: its binaries first on PATH. */
function runScript(dir: string, command: string): { status: number | null; output: string } {
  const env = { ...process.env, PATH: `${BIN}${path.delimiter}${process.env.PATH ?? ''}` };
  const r = spawnSync('sh', ['-c', command], { cwd: dir, env, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** A two-file project laid out as this one (src/, the two configs), whose types do not check. */
function illTypedProject(name: string): string {
  const dir = path.join(scratch, name);
  fs.mkdirSync(path.join(dir, 'src'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'scripts'));
  fs.copyFileSync('scripts/transpile.mjs', path.join(dir, 'scripts', 'transpile.mjs'));
  const options = { target: 'ES2022', module: 'NodeNext', strict: true, types: [], outDir: 'dist', rootDir: '.' };
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: options, include: ['src'] }));
  const pkgConfig = { extends: './tsconfig.json', include: ['src'] };
  fs.writeFileSync(path.join(dir, 'tsconfig.package.json'), JSON.stringify(pkgConfig));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  fs.writeFileSync(path.join(dir, 'src', 'a.ts'), "export type Count = number;\nexport const n: Count = 'three';\n");
  fs.writeFileSync(
    path.join(dir, 'src', 'b.ts'),
    "import { n, type Count } from './a.js';\nconst m: Count = n;\nconsole.log(`m=${m}`);\n",
  );
  return dir;
}

describe('the demo path emits without type-checking', () => {
  const demoBuild = pkg.scripts.demo?.split(' && ')[0] ?? '';

  it('prepare and the demo emit a project the build rejects for its types', () => {
    const dir = illTypedProject('demo-path');
    const build = runScript(dir, pkg.scripts.build ?? 'absent');
    expect(build.status, build.output).not.toBe(0);
    expect(build.output).toMatch(/error TS2322/);
    for (const [name, command] of [
      ['prepare', pkg.scripts.prepare ?? 'absent'],
      ['demo', demoBuild],
    ] as const) {
      fs.rmSync(path.join(dir, 'dist'), { recursive: true, force: true });
      const r = runScript(dir, command);
      expect(r.status, `${name}: ${command}\n${r.output}`).toBe(0);
      expect(execFileSync(process.execPath, [path.join(dir, 'dist', 'src', 'b.js')], { encoding: 'utf8' })).toBe(
        'm=three\n',
      );
    }
  });

  it("emits again only what changed, and then makes tsc's next build emit everything", () => {
    const dir = illTypedProject('again');
    const prepare = pkg.scripts.prepare ?? 'absent';
    expect(runScript(dir, prepare).output).toMatch(/^transpiled 2 file/);
    // As `npm test` leaves them: tsc's records of its last builds.
    const records = ['.tsbuildinfo', '.tsbuildinfo-package'].map((f) => path.join(dir, 'dist', f));
    for (const r of records) fs.writeFileSync(r, '{}');
    expect(runScript(dir, prepare)).toEqual({ status: 0, output: '' });
    expect(records.filter((r) => fs.existsSync(r))).toEqual(records);
    // Touched, not changed: tsc -b would keep this emit for good if its records stayed.
    const later = new Date(Date.now() + 60_000);
    fs.utimesSync(path.join(dir, 'src', 'a.ts'), later, later);
    expect(runScript(dir, prepare).output).toMatch(/^transpiled 1 file/);
    expect(records.filter((r) => fs.existsSync(r))).toEqual([]);
  });

  it('every module of src/, emitted file by file, loads', { timeout: 180_000 }, () => {
    const dir = path.join(scratch, 'src');
    fs.mkdirSync(dir);
    const config = {
      extends: path.join(ROOT, 'tsconfig.package.json'),
      compilerOptions: { outDir: path.join(dir, 'out'), rootDir: ROOT },
    };
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(config));
    const emit = runScript(ROOT, `node scripts/transpile.mjs ${path.join(dir, 'tsconfig.json')}`);
    expect(emit.status, emit.output).toBe(0);
    const out = path.join(dir, 'out', 'src');
    const modules = fs
      .readdirSync(out, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.js'))
      .map((f) => path.join(out, f));
    expect(modules.length).toBe(sourceCount());
    // cli/main.js runs the command line when loaded; everything else only declares. A child
    // process, so that nothing a module sets up stays in the test's.
    const loadable = modules.filter((m) => !m.endsWith(path.join('cli', 'main.js')));
    const script = `for (const m of ${JSON.stringify(loadable)}) await import(m); console.log('loaded');`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(`${r.stdout}${r.stderr}`).toBe('loaded\n');
  });
});

function sourceCount(): number {
  return fs
    .readdirSync('src', { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')).length;
}
