/** Regenerates the README's metric tables from the catalogues: `npm run docs`. */
import fs from 'node:fs';
import { DOC_TABLES } from '../src/catalogues.js';
import { metricsTable, replaceSection } from '../src/telemetry/docs.js';
import { documentedCommands } from '../src/cli/program.js';
import { optionsTable } from '../src/cli/options-table.js';

let readme = fs.readFileSync('README.md', 'utf8');
for (const [key, specs] of Object.entries(DOC_TABLES)) readme = replaceSection(readme, key, metricsTable(specs));
for (const [key, cmd] of Object.entries(documentedCommands({}))) readme = replaceSection(readme, key, optionsTable(cmd));
fs.writeFileSync('README.md', readme);
console.log(`README.md: ${Object.keys(DOC_TABLES).length} metric tables and ${Object.keys(documentedCommands({})).length} option tables regenerated`);
