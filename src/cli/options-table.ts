/** The README's configuration tables, generated from the commands' own option definitions. */
import type { Command } from 'commander';

export function optionsTable(cmd: Command): string {
  const rows = cmd.options
    .filter((o) => o.long !== '--help' && o.long !== '--version')
    .map((o) => {
      const def = o.defaultValueDescription ?? (o.defaultValue === undefined ? '—' : JSON.stringify(o.defaultValue));
      return `| \`${o.flags}\` | ${o.envVar ? `\`${o.envVar}\`` : '—'} | ${def === '—' ? def : `\`${def.replace(/^"|"$/g, '')}\``} | ${o.description} |`;
    });
  return ['| flag | environment | default | description |', '|---|---|---|---|', ...rows].join('\n');
}
