/**
 * src/cluster/api/ is layered: json/ (bytes and JSON, no model) at the bottom, http/ (transport and
 * tokens) and decode/ (bodies to the model) on it, the client calls at the top level. The lint wall
 * (eslint.config.js) judges import specifiers as written; this test resolves every relative import
 * of every file, however it is spelt, and checks the resolved edges go downwards only.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const API = path.join(ROOT, 'src/cluster/api');

type Layer = 'json' | 'http' | 'decode' | 'top';
/** What each layer may import within api/, besides itself. */
const MAY_IMPORT: Readonly<Record<Layer, readonly Layer[]>> = {
  json: [],
  http: ['json'],
  decode: ['json'],
  top: ['json', 'http', 'decode'],
};

function sourceFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : [path.join(dir, e.name)]))
    .filter((f) => f.endsWith('.ts'));
}

/** The layer of a file under api/, or undefined outside api/. */
function layerOf(file: string): Layer | undefined {
  const rel = path.relative(API, file);
  if (rel.startsWith('..')) return undefined;
  const [first, ...rest] = rel.split(path.sep);
  if (rest.length === 0) return 'top';
  if (first === 'json' || first === 'http' || first === 'decode') return first;
  throw new Error(`${rel}: a folder of src/cluster/api/ the layers do not know`);
}

/** Relative import specifiers of a file (static, re-exports and dynamic), resolved to files. */
function importedFiles(file: string, text: string): string[] {
  const specs = [...text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1] ?? '');
  return specs.map((s) => path.resolve(path.dirname(file), s).replace(/\.js$/, '.ts'));
}

interface Edge {
  readonly from: string;
  readonly to: string;
}

type Read = (file: string) => string;
const readSource: Read = (file) => fs.readFileSync(file, 'utf8');

function upwardEdges(files: readonly string[], read: Read = readSource): Edge[] {
  const bad: Edge[] = [];
  for (const from of files) {
    const own = layerOf(from) as Layer;
    for (const to of importedFiles(from, read(from))) {
      const theirs = layerOf(to);
      if (theirs === undefined || theirs === own || MAY_IMPORT[own].includes(theirs)) continue;
      bad.push({ from: path.relative(ROOT, from), to: path.relative(ROOT, to) });
    }
  }
  return bad;
}

describe('src/cluster/api/ layers', () => {
  const files = sourceFiles(API);

  it('has every layer, each with files', () => {
    const layers = new Set(files.map(layerOf));
    expect([...layers].sort()).toEqual(['decode', 'http', 'json', 'top']);
  });

  it('every import resolves to a file that exists', () => {
    const missing = files.flatMap((f) => importedFiles(f, readSource(f)).filter((t) => !fs.existsSync(t)));
    expect(missing).toEqual([]);
  });

  it('no file imports a layer above its own (json/ < http/, decode/ < the top level)', () => {
    expect(upwardEdges(files)).toEqual([]);
  });

  it('would report an upward import, however it is spelt', () => {
    const file = path.join(API, 'decode', 'deep', 'x.ts');
    const code =
      "import { readText } from '../../http/transport.js';\nexport { ENDPOINTS } from '../../../api/paths.js';\n";
    expect(upwardEdges([file], () => code)).toEqual([
      { from: 'src/cluster/api/decode/deep/x.ts', to: 'src/cluster/api/http/transport.ts' },
      { from: 'src/cluster/api/decode/deep/x.ts', to: 'src/cluster/api/paths.ts' },
    ]);
  });

  it('is slurmrestd only: nothing in it imports src/cluster/kubernetes/ or is named after Kubernetes', () => {
    const kube = path.join(ROOT, 'src/cluster/kubernetes');
    expect(fs.existsSync(kube)).toBe(true);
    const edges = files.flatMap((f) =>
      importedFiles(f, readSource(f))
        .filter((t) => !path.relative(kube, t).startsWith('..'))
        .map((t) => `${path.relative(ROOT, f)} -> ${path.relative(ROOT, t)}`),
    );
    expect(edges).toEqual([]);
    expect(files.map((f) => path.relative(ROOT, f)).filter((f) => /kube/i.test(f))).toEqual([]);
  });
});
