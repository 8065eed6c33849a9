// Compiles the node agent's fd reader (native/fd-reader.c) into dist/native/fd-reader.node, a
// Node-API module: `npm run build` and `npm pack` (prepack) run it, and so the single executable's
// build (`npm ci` and `npm run demo` transpile only: the demo reads fd tables through Node's fs).
// Without a C compiler the agent reads fd tables through Node's fs instead (slower, the same
// answers): here that is a loud warning, and under CI (where the tests prove the reader) an error.
// Plain JavaScript on purpose: it runs before anything is compiled.
//
//   node scripts/native.mjs
//
// Compiles again only when the source or the headers are newer than the module.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const source = path.join(root, 'native/fd-reader.c');
const headers = path.join(root, 'node_modules/node-api-headers/include');
const out = path.join(root, 'dist/native/fd-reader.node');
const cc = process.env.CC || 'cc';

function mtime(file) {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return -1;
  }
}

function missing(why) {
  const line = `[native] ${why}: the node agent will read fd tables through Node's fs (slower)`;
  if (process.env.CI) {
    process.stderr.write(`${line}. CI is set: failing (install gcc and libc6-dev, then npm ci)\n`);
    process.exit(1);
  }
  process.stderr.write(`${line}. To build it: apt-get install gcc libc6-dev (or set CC), then npm run build\n`);
  process.exit(0);
}

if (!fs.existsSync(path.join(headers, 'node_api.h'))) missing('no Node-API headers (node_modules/node-api-headers)');
if (mtime(out) > Math.max(mtime(source), mtime(path.join(headers, 'node_api.h')))) process.exit(0);
fs.mkdirSync(path.dirname(out), { recursive: true });
const args = ['-O2', '-Wall', '-Wextra', '-Werror', '-fPIC', '-shared', '-fvisibility=hidden'];
const built = spawnSync(cc, [...args, `-I${headers}`, '-o', `${out}.tmp`, source], { encoding: 'utf8' });
if (built.error) missing(`no C compiler (${cc}: ${built.error.code ?? built.error.message})`);
if (built.status !== 0) {
  process.stderr.write(`[native] ${cc} failed:\n${built.stderr}${built.stdout}\n`);
  process.exit(1);
}
// The agent refuses a module that others may write (fd-native.ts), whatever the umask made.
fs.chmodSync(`${out}.tmp`, 0o755);
fs.chmodSync(path.dirname(out), 0o755);
fs.renameSync(`${out}.tmp`, out);
