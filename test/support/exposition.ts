/** A small reader of the Prometheus text exposition, for assertions. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`unparsable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL))
      labels[l[1] as string] = (l[2] as string).replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    out.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return out;
}

/** Samples of one metric whose labels include `match`. */
export function select(samples: readonly Sample[], name: string, match: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v));
}

export function valueOf(
  samples: readonly Sample[],
  name: string,
  match: Record<string, string> = {},
): number | undefined {
  const found = select(samples, name, match);
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(match)}`);
  return found[0]?.value;
}

/** The sum over every sample of `name` that matches: what `sum by` over the other labels gives. */
export function sumOf(samples: readonly Sample[], name: string, match: Record<string, string> = {}): number {
  return select(samples, name, match).reduce((total, s) => total + s.value, 0);
}
