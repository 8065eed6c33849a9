// Emits the JavaScript of a TypeScript project file by file, without type-checking: what `npm ci`
// (prepare) and `npm run demo` need to run the package, in a fraction of a full compile's time (no
// program: neither the library and Node type definitions nor the checker are loaded). `npm test`,
// `npm run build` and `npm pack` (prepack) still compile with `tsc -b`, which checks every type
// and writes const enum values into the code that reads them; a file emitted here reads them
// from the enum's module instead, which the project keeps (preserveConstEnums), so the two kinds
// of output mix. test/lint/transpile.test.ts proves every module emitted here loads.
// Plain JavaScript on purpose: it runs before anything is compiled.
//
//   node scripts/transpile.mjs [tsconfig] — default tsconfig.package.json
//
// A file is emitted again only when its source is newer than its output, so a second run after
// `npm ci` writes nothing; when one is, tsc's build records go, so that the next `tsc -b` emits
// every file again. Exits 1 on a syntax error, naming it.
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import ts from 'typescript';

/** The project's compiler options and source files, read as tsc reads them. */
function readProject(configPath) {
  const read = ts.readConfigFile(configPath, ts.sys.readFile);
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, path.dirname(path.resolve(configPath)));
  if (parsed.errors.length > 0)
    throw new Error(parsed.errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')).join('\n'));
  return parsed;
}

/** Where tsc writes the JavaScript of `file` (a .ts source) under the project's outDir and rootDir. */
function outputOf(options, file) {
  const rel = path.relative(options.rootDir, file);
  return path.join(
    options.outDir,
    rel.replace(/\.(m|c)?ts$/, (_, k) => `.${k ?? ''}js`),
  );
}

function isStale(source, output) {
  try {
    return fs.statSync(output).mtimeMs < fs.statSync(source).mtimeMs;
  } catch {
    return true;
  }
}

/**
 * One file's JavaScript and source map. The package is an ES module package, so NodeNext emits
 * ES modules for .ts sources; transpiling alone cannot look up package.json, so it is told.
 */
function transpile(options, file, output) {
  const result = ts.transpileModule(fs.readFileSync(file, 'utf8'), {
    fileName: file,
    reportDiagnostics: true,
    compilerOptions: { ...options, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler },
  });
  const errors = (result.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0) {
    const text = errors.map((d) => `${file}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    throw new Error(text.join('\n'));
  }
  fs.mkdirSync(path.dirname(output), { recursive: true });
  let js = result.outputText;
  if (result.sourceMapText !== undefined) {
    // The map names its output and source relative to where it lies, as tsc's do.
    const map = JSON.parse(result.sourceMapText);
    map.file = path.basename(output);
    map.sources = [path.relative(path.dirname(output), file).split(path.sep).join('/')];
    fs.writeFileSync(`${output}.map`, JSON.stringify(map));
    js = js.replace(/\/\/# sourceMappingURL=\S+\s*$/, `//# sourceMappingURL=${path.basename(output)}.map`);
  }
  fs.writeFileSync(output, js);
}

/**
 * Removes tsc's records of its last builds (dist/.tsbuildinfo*). tsc -b judges a source by its
 * content, not its time: a source touched without a change and emitted here would otherwise keep
 * this emit, not tsc's, until its next change. Without a record the next tsc -b emits everything.
 */
function forgetBuilds(outDir) {
  const records = fs.existsSync(outDir) ? fs.readdirSync(outDir).filter((f) => f.startsWith('.tsbuildinfo')) : [];
  for (const f of records) fs.rmSync(path.join(outDir, f), { force: true });
}

function main(argv) {
  const project = readProject(argv[0] ?? 'tsconfig.package.json');
  const { options } = project;
  if (!options.outDir || !options.rootDir) throw new Error('the project must set outDir and rootDir');
  const stale = project.fileNames
    .filter((file) => !file.endsWith('.d.ts'))
    .map((file) => ({ file, output: outputOf(options, file) }))
    .filter(({ file, output }) => isStale(file, output));
  // Before the first write: a run cut short must not leave tsc trusting what it did not write.
  if (stale.length > 0) forgetBuilds(options.outDir);
  for (const { file, output } of stale) transpile(options, file, output);
  return stale.length;
}

try {
  const written = main(process.argv.slice(2));
  if (written > 0) process.stdout.write(`transpiled ${written} file(s) without type-checking (npm test checks them)\n`);
} catch (err) {
  process.stderr.write(`transpile: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
