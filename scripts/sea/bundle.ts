/**
 * The single executable's main script: the whole CLI bundled by esbuild into one CommonJS file
 * (scripts/sea/build.ts makes the executable from it). Apart from the build so that tests can run
 * the very bundle the executable carries: what it loads at start is the executable's to pay.
 *
 * The bundle needs nothing on disk: the package version and the bcrypt worker (the one module
 * loaded by path at run time) are put into it through esbuild's `define`, and any esbuild warning
 * (an import it cannot resolve, an `import.meta` it cannot honour) fails it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { build, type BuildOptions, type Message } from 'esbuild';
import { bcryptWorkerSource } from '../../src/telemetry/webconfig.js';

function failed(message: string): never {
  throw new Error(message);
}

function formatMessages(messages: Message[]): string {
  return messages.map((m) => `${m.location ? `${m.location.file}:${m.location.line}: ` : ''}${m.text}`).join('\n  ');
}

/** One esbuild run into memory; any warning fails it (see the header). */
async function bundleText(options: BuildOptions): Promise<string> {
  const result = await build({ ...options, bundle: true, platform: 'node', write: false, logLevel: 'silent' }).catch(
    (err: { errors?: Message[] }) => failed(`esbuild failed:\n  ${formatMessages(err.errors ?? [])}`),
  );
  // `import.meta` is empty in CommonJS: allowed only where the bundled constants made it dead code,
  // which the output shows (no `import_meta.url` left, only the empty object's declaration).
  const warnings = result.warnings.filter((w) => w.id !== 'empty-import-meta');
  if (warnings.length > 0) failed(`esbuild warned (the bundle may read from disk):\n  ${formatMessages(warnings)}`);
  const file = result.outputFiles?.[0];
  if (!file) failed('esbuild wrote nothing');
  if (/\bimport_meta\d*\./.test(file.text))
    failed(`the bundle still uses import.meta, empty in CommonJS:\n  ${formatMessages(result.warnings)}`);
  return file.text;
}

/** The bcrypt worker's code with bcryptjs inside it (a worker cannot reach the executable's bundle). */
function bcryptWorker(target: string, root: string): Promise<string> {
  return bundleText({
    stdin: { contents: bcryptWorkerSource("require('bcryptjs')"), resolveDir: root, loader: 'js' },
    absWorkingDir: root,
    format: 'cjs',
    target,
    minify: true,
  });
}

/**
 * The whole CLI of the checkout at `root`, as `npm run build` emitted it, in one CommonJS script (a
 * SEA's main script must be one).
 */
export async function cliBundle(target: string, root: string): Promise<string> {
  const entry = path.join(root, 'dist/src/cli/main.js');
  if (!fs.existsSync(entry)) failed(`no ${path.relative(root, entry)}: run npm run build first`);
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
  const text = await bundleText({
    entryPoints: [entry],
    // The names esbuild gives the bundled modules are relative to this directory: the checkout's,
    // so that the bundle, and the executable made from it, are the same from any directory the
    // build runs in, and carry no path of the machine that built them.
    absWorkingDir: root,
    format: 'cjs',
    target,
    // Whitespace and syntax only: stack traces keep the functions' names.
    minifyWhitespace: true,
    minifySyntax: true,
    define: {
      SLURM_OTEL_BUNDLED_VERSION: JSON.stringify(pkg.version),
      SLURM_OTEL_BUNDLED_BCRYPT_WORKER: JSON.stringify(await bcryptWorker(target, root)),
    },
  });
  // The entry's `#!/usr/bin/env node` line: a SEA main script is compiled as a function body.
  return text.replace(/^#![^\n]*\n/, '');
}
