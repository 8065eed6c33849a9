/**
 * Prints, one a line and relative to the repository, the directories of the packages the shipped
 * build loads: package.json's dependencies and, recursively, theirs (optional ones when
 * installed), each resolved as Node resolves it (the nearest node_modules first). boot.sh copies
 * only these into the soft-RoCE guest. Usage: node dist/scripts/soft-roce/packages.js <repo>
 */
import fs from 'node:fs';
import path from 'node:path';

interface PackageJson {
  readonly dependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
}

const depsOf = (dir: string): string[] => {
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as PackageJson;
  return Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies });
};

/** The directory `name` resolves to from `from` (inside `repo`), or undefined when not installed. */
function resolve(repo: string, name: string, from: string): string | undefined {
  for (let dir = from; dir.startsWith(repo); dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (dir === repo) break;
  }
  return undefined;
}

function productionPackages(repo: string): string[] {
  const seen = new Set<string>();
  const queue: [string, string][] = depsOf(repo).map((name) => [name, repo]);
  for (let item = queue.shift(); item !== undefined; item = queue.shift()) {
    const [name, from] = item;
    const dir = resolve(repo, name, from);
    if (dir === undefined || seen.has(dir)) continue;
    seen.add(dir);
    for (const dep of depsOf(dir)) queue.push([dep, dir]);
  }
  return [...seen].map((dir) => path.relative(repo, dir)).sort();
}

process.stdout.write(productionPackages(path.resolve(process.argv[2] ?? '.')).join('\n') + '\n');
