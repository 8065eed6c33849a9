/**
 * No module of src/ reaches itself through its imports: static, type-only and lazy (`import()`)
 * edges alike, since a cycle through any of them ties the modules' meaning together, and a cycle
 * through a value import makes load order decide what a module sees.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

type Graph = ReadonlyMap<string, readonly string[]>;

/** Every `.ts` file under `dir`, relative to ROOT. */
function sources(dir: string): string[] {
  return fs
    .readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.posix.join(dir, f.split(path.sep).join('/')))
    .sort();
}

/** The relative imports of each file, resolved to the files they name (`./x.js` is `./x.ts`). */
function importGraph(files: readonly string[], read: (file: string) => string): Graph {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const info = ts.preProcessFile(read(file), true, true);
    const targets = info.importedFiles
      .map((r) => r.fileName)
      .filter((s) => s.startsWith('.'))
      .map((s) => path.posix.join(path.posix.dirname(file), s).replace(/\.js$/, '.ts'))
      .filter((t) => known.has(t));
    graph.set(file, [...new Set(targets)].sort());
  }
  return graph;
}

/** The strongly connected components with more than one file, or a file importing itself. */
function cycles(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('import cycles', () => {
  it('src/ has none', () => {
    const files = sources('src');
    expect(files.length).toBeGreaterThan(50);
    const graph = importGraph(files, (f) => fs.readFileSync(path.join(ROOT, f), 'utf8'));
    expect(cycles(graph)).toEqual([]);
  });

  it('finds a cycle through a type-only import and a lazy import, and one of a file on itself', () => {
    const code: Record<string, string> = {
      'src/a.ts': "import type { B } from './b.js';\nexport const a = 1;",
      'src/b.ts': "export type B = 1;\nexport const load = () => import('./c.js');",
      'src/c.ts': "import { a } from './a.js';\nexport const c = a;",
      'src/d.ts': "import { a } from './a.js';\nexport { d } from './d.js';",
      'src/e.ts': "import fs from 'node:fs';\nimport { d } from './d.js';",
    };
    const graph = importGraph(Object.keys(code), (f) => code[f]!);
    expect(cycles(graph)).toEqual(expect.arrayContaining([['src/a.ts', 'src/b.ts', 'src/c.ts'], ['src/d.ts']]));
    expect(cycles(graph)).toHaveLength(2);
  });
});
