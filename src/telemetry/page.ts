/** Minimal HTML for the agents' landing pages: no assets, everything escaped. */
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export interface PageParts {
  readonly title: string;
  /** Seconds between automatic reloads. */
  readonly refreshSeconds: number;
  /** Already-escaped HTML for the body, after the heading. */
  readonly body: string;
  readonly style?: string;
}

export function page(p: PageParts): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="${Math.max(5, Math.round(p.refreshSeconds))}">
<title>${escapeHtml(p.title)}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}code{font-size:12px}.warn{color:#a40}
${p.style ?? ''}
</style></head>
<body>
<h1>${escapeHtml(p.title)}</h1>
${p.body}
</body></html>
`;
}
