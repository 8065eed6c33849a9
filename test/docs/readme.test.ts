import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { documentedCommands } from '../../src/cli/program.js';
import { DOC_TABLES, metricsTable, optionsTable, section } from '../../scripts/docs-tables.js';

const readme = fs.readFileSync('README.md', 'utf8');

describe('README', () => {
  for (const [key, specs] of Object.entries(DOC_TABLES)) {
    it(`documents the ${key} catalogue exactly (regenerate with npm run docs)`, () => {
      expect(section(readme, key)).toBe(metricsTable(specs));
    });
  }

  for (const [key, cmd] of Object.entries(documentedCommands({}))) {
    it(`documents every option of ${key} (regenerate with npm run docs)`, () => {
      expect(section(readme, key)).toBe(optionsTable(cmd));
    });
  }

  it('shows the test command that .ci/run runs', () => {
    const ci = fs.readFileSync('.ci/run', 'utf8');
    const cmd = /npm ci && npm test/.exec(ci)?.[0];
    expect(cmd).toBeDefined();
    expect(readme).toContain(cmd as string);
  });
});
