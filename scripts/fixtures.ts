/**
 * Writes the constructed Slurm REST responses of fixtures/slurm/built/ (see
 * scripts/slurm-fixtures.ts). `npm run fixtures`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { builtFixtures } from './slurm-fixtures.js';

const DIR = path.join('fixtures', 'slurm', 'built');

const files = builtFixtures();
for (const [file, text] of files) {
  fs.mkdirSync(path.dirname(path.join(DIR, file)), { recursive: true });
  fs.writeFileSync(path.join(DIR, file), text);
}
console.log(`${DIR}: ${files.size} files written`);
