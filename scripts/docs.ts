/**
 * Regenerates what is derived from declarations: the metric tables of docs/metrics.md (from the
 * catalogues), the option tables of docs/configuration.md (from the CLI), and the alert rules with
 * the thresholds and runbook of docs/operations.md and the recording rules quoted in
 * docs/node-agent.md (from scripts/alerts.ts). `npm run docs`.
 */
import fs from 'node:fs';
import { DOC_FILES, DOC_TABLES, metricsTable, optionsTable, replaceSection } from './docs-tables.js';
import { documentedCommands } from '../src/cli/program.js';
import { ALERT_RULES_FILE, recordingRulesDoc, renderAlertRules, runbook, thresholdsTable } from './alerts.js';

/** Rewrites the generated sections of one page, keyed by section name. */
function regenerate(file: string, sections: Readonly<Record<string, string>>): void {
  let doc = fs.readFileSync(file, 'utf8');
  for (const [key, body] of Object.entries(sections)) doc = replaceSection(doc, key, body);
  fs.writeFileSync(file, doc);
}

const metrics = Object.fromEntries(Object.entries(DOC_TABLES).map(([key, specs]) => [key, metricsTable(specs)]));
const options = Object.fromEntries(
  Object.entries(documentedCommands({})).map(([key, cmd]) => [key, optionsTable(cmd)]),
);
regenerate(DOC_FILES.metrics, metrics);
regenerate(DOC_FILES.configuration, options);
regenerate(DOC_FILES.operations, { 'alert-thresholds': thresholdsTable(), 'alert-runbook': runbook() });
regenerate(DOC_FILES.nodeAgent, { 'job-usage-rules': recordingRulesDoc() });
fs.writeFileSync(ALERT_RULES_FILE, renderAlertRules());
console.log(
  `${DOC_FILES.metrics}: ${Object.keys(metrics).length} metric tables; ${DOC_FILES.configuration}: ` +
    `${Object.keys(options).length} option tables; ${ALERT_RULES_FILE} and its runbook in ${DOC_FILES.operations}`,
);
