/**
 * The generated sections of docs/ are what `npm run docs` would write from today's declarations:
 * the metric tables from the catalogues, the option tables from the commands' option definitions.
 * (The alert thresholds and runbook are checked in test/alerts/rules.test.ts.)
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { documentedCommands } from '../../src/cli/program.js';
import { DOC_FILES, DOC_TABLES, metricsTable, optionsTable, section } from '../../scripts/docs-tables.js';

const metrics = fs.readFileSync(DOC_FILES.metrics, 'utf8');
const configuration = fs.readFileSync(DOC_FILES.configuration, 'utf8');

describe(DOC_FILES.metrics, () => {
  for (const [key, specs] of Object.entries(DOC_TABLES)) {
    it(`documents the ${key} catalogue exactly (regenerate with npm run docs)`, () => {
      expect(section(metrics, key)).toBe(metricsTable(specs));
    });
  }
});

describe(DOC_FILES.configuration, () => {
  for (const [key, cmd] of Object.entries(documentedCommands({}))) {
    it(`documents every option of ${key} (regenerate with npm run docs)`, () => {
      expect(section(configuration, key)).toBe(optionsTable(cmd));
    });
  }
});
