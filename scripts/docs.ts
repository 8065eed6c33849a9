/**
 * Regenerates what is derived from declarations: the README's metric and option tables (from the
 * catalogues and the CLI), and the alert rules with their README thresholds and runbook (from
 * scripts/alerts.ts). `npm run docs`.
 */
import fs from 'node:fs';
import { DOC_TABLES, metricsTable, optionsTable, replaceSection } from './docs-tables.js';
import { documentedCommands } from '../src/cli/program.js';
import { ALERT_RULES_FILE, renderAlertRules, runbook, thresholdsTable } from './alerts.js';

let readme = fs.readFileSync('README.md', 'utf8');
for (const [key, specs] of Object.entries(DOC_TABLES)) readme = replaceSection(readme, key, metricsTable(specs));
for (const [key, cmd] of Object.entries(documentedCommands({})))
  readme = replaceSection(readme, key, optionsTable(cmd));
readme = replaceSection(readme, 'alert-thresholds', thresholdsTable());
readme = replaceSection(readme, 'alert-runbook', runbook());
fs.writeFileSync('README.md', readme);
fs.writeFileSync(ALERT_RULES_FILE, renderAlertRules());
console.log(
  `README.md: ${Object.keys(DOC_TABLES).length} metric tables and ${Object.keys(documentedCommands({})).length} option tables, ${ALERT_RULES_FILE} and its runbook regenerated`,
);
