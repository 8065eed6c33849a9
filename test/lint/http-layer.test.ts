/**
 * src/cluster/http/ is what the slurmrestd client (api/) and the Kubernetes API clients
 * (kubernetes/) share: it imports neither, and neither it nor kubernetes/ speaks of Slurm errors
 * (a Kubernetes list that fails is not a Slurm failure). Every relative import is resolved,
 * however it is spelt.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLUSTER = path.join(ROOT, 'src/cluster');
const HTTP = path.join(CLUSTER, 'http');
const KUBERNETES = path.join(CLUSTER, 'kubernetes');

function sourceFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : [path.join(dir, e.name)]))
    .filter((f) => f.endsWith('.ts'));
}

function importedFiles(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1] ?? '');
  return specs.map((s) => path.resolve(path.dirname(file), s).replace(/\.js$/, '.ts'));
}

const inside = (dir: string, file: string): boolean => !path.relative(dir, file).startsWith('..');

describe('src/cluster/http/, the layer both API clients share', () => {
  const files = sourceFiles(HTTP);

  it('holds the transport and the failure kinds', () => {
    expect(files.map((f) => path.basename(f)).sort()).toEqual(['failure.ts', 'transport.ts']);
  });

  it('imports neither client', () => {
    const edges = files.flatMap((f) =>
      importedFiles(f)
        .filter((t) => inside(path.join(CLUSTER, 'api'), t) || inside(KUBERNETES, t))
        .map((t) => `${path.relative(ROOT, f)} -> ${path.relative(ROOT, t)}`),
    );
    expect(edges).toEqual([]);
  });

  it('names no Slurm error, nor does the Kubernetes client', () => {
    const named = [...files, ...sourceFiles(KUBERNETES)].flatMap((f) =>
      [...fs.readFileSync(f, 'utf8').matchAll(/\bSlurm\w*Error\b/g)].map((m) => `${path.relative(ROOT, f)}: ${m[0]}`),
    );
    expect(named).toEqual([]);
  });

  it('the Kubernetes client reaches the transport and the failure kinds through it, not through api/', () => {
    const viaApi = sourceFiles(KUBERNETES).flatMap((f) =>
      importedFiles(f)
        .filter((t) => /api\/(?:failures|http\/transport)\.ts$/.test(t))
        .map((t) => `${path.relative(ROOT, f)} -> ${path.relative(ROOT, t)}`),
    );
    expect(viaApi).toEqual([]);
  });
});
