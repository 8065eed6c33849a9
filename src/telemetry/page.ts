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

export interface SparkSize {
  readonly width: number;
  readonly height: number;
}

const SPARK: SparkSize = { width: 120, height: 24 };
/** Keeps the stroke inside the box at the top and bottom. */
const SPARK_PAD = 2;

const round1 = (n: number): number => Math.round(n * 10) / 10;

/**
 * The `d` of an SVG path through the values, left to right, on an axis from 0 (or the lowest
 * value, if negative) to the highest: a flat series at 0 lies on the bottom, any other flat
 * series on the top. An undefined value breaks the line; a point alone is a zero-length segment,
 * drawn as a dot by a round line cap. Empty when no value is defined.
 */
export function sparkPath(values: readonly (number | undefined)[], size: SparkSize = SPARK): string {
  const known = values.filter((v): v is number => v !== undefined && Number.isFinite(v));
  if (known.length === 0) return '';
  const min = Math.min(0, ...known);
  const span = Math.max(...known) - min;
  const inner = size.height - 2 * SPARK_PAD;
  const y = (v: number): number => round1(SPARK_PAD + inner - (span === 0 ? 0 : ((v - min) / span) * inner));
  const x = (i: number): number => (values.length > 1 ? round1((i * size.width) / (values.length - 1)) : size.width);
  const parts: string[] = [];
  let drawing = false;
  values.forEach((v, i) => {
    if (v === undefined || !Number.isFinite(v)) {
      drawing = false;
      return;
    }
    const lonely = !drawing && !isDefined(values[i + 1]);
    parts.push(`${drawing ? 'L' : 'M'}${x(i)} ${y(v)}${lonely ? ' h0' : ''}`);
    drawing = true;
  });
  return parts.join(' ');
}

const isDefined = (v: number | undefined): boolean => v !== undefined && Number.isFinite(v);

/** An inline SVG sparkline (no script, no external asset); `label` is its accessible name and tooltip. */
export function sparkline(values: readonly (number | undefined)[], label: string, size: SparkSize = SPARK): string {
  const d = sparkPath(values, size);
  const path = d
    ? `<path d="${d}" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linecap="round" stroke-linejoin="round"/>`
    : '';
  return `<svg class="spark" width="${size.width}" height="${size.height}" viewBox="0 0 ${size.width} ${size.height}" role="img" aria-label="${escapeHtml(label)}"><title>${escapeHtml(label)}</title>${path}</svg>`;
}

const SI = ['', 'k', 'M', 'G', 'T', 'P'] as const;

/** A quantity with an SI prefix, three significant digits: `1.25 GB`, `0.5 `; `—` when unknown. */
export function formatSi(n: number | undefined, unit = ''): string {
  if (n === undefined || !Number.isFinite(n)) return '—';
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1000 && i < SI.length - 1) {
    v /= 1000;
    i++;
  }
  return `${Number(v.toPrecision(3))} ${SI[i]}${unit}`;
}

/** A per-second rate: `1.25 GB/s`, `0.5 /s`; `—` when unknown. */
export function formatRate(perSecond: number | undefined, unit = ''): string {
  return perSecond === undefined || !Number.isFinite(perSecond) ? '—' : `${formatSi(perSecond, unit)}/s`;
}
