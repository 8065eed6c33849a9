/**
 * The shape of a JSON document: every member path (`nodes[].boot_time.number`) with the JSON
 * types seen there. Two shapes are compared only where both have seen the parent: a member of an
 * array element is known only when some element exists, so an empty array in one document says
 * nothing about its elements' members.
 */
export type JsonType = 'null' | 'boolean' | 'number' | 'string' | 'array' | 'object';
export type Shape = Map<string, Set<JsonType>>;

function typeOf(v: unknown): JsonType {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  const t = typeof v;
  return t === 'boolean' || t === 'number' || t === 'string' ? t : 'object';
}

export function shapeOf(doc: unknown, skip: (path: string) => boolean = () => false): Shape {
  const shape: Shape = new Map();
  const visit = (v: unknown, path: string): void => {
    if (skip(path)) return;
    const t = typeOf(v);
    const seen = shape.get(path) ?? new Set<JsonType>();
    seen.add(t);
    shape.set(path, seen);
    if (t === 'array') for (const e of v as unknown[]) visit(e, `${path}[]`);
    // Objects keyed by index (v0.0.40's `sockets`/`cores` maps) are one member: `*`.
    if (t === 'object')
      for (const [k, e] of Object.entries(v as object)) {
        const key = /^\d+$/.test(k) ? '*' : k;
        visit(e, path === '' ? key : `${path}.${key}`);
      }
  };
  visit(doc, '');
  return shape;
}

function parentOf(path: string): string {
  if (path.endsWith('[]')) return path.slice(0, -2);
  const dot = path.lastIndexOf('.');
  return dot < 0 ? '' : path.slice(0, dot);
}

export interface ShapeDiff {
  /** In the recording, never in the fake (where the fake has the parent). */
  readonly missing: string[];
  /** In the fake, never in the recording (where the recording has the parent). */
  readonly extra: string[];
  /** In both, with a type the other never has (`path: recorded types / fake types`); null is ignored. */
  readonly types: string[];
}

export function compareShapes(recorded: Shape, fake: Shape): ShapeDiff {
  const missing: string[] = [];
  const extra: string[] = [];
  const types: string[] = [];
  for (const [path, rt] of recorded) {
    const ft = fake.get(path);
    if (ft === undefined) {
      if (path !== '' && fake.has(parentOf(path))) missing.push(path);
      continue;
    }
    const r = [...rt].filter((t) => t !== 'null').sort();
    const f = [...ft].filter((t) => t !== 'null').sort();
    if (r.length && f.length && (r.some((t) => !ft.has(t)) || f.some((t) => !rt.has(t))))
      types.push(`${path}: ${r.join('|')} / ${f.join('|')}`);
  }
  for (const path of fake.keys())
    if (!recorded.has(path) && path !== '' && recorded.has(parentOf(path))) extra.push(path);
  // An array's elements are content, not shape: one side may just have none there.
  const content = (p: string) => p.endsWith('[]');
  missing.splice(0, missing.length, ...missing.filter((p) => !content(p)));
  extra.splice(0, extra.length, ...extra.filter((p) => !content(p)));
  // Only the topmost of a missing/extra subtree: its members follow.
  const top = (list: string[]) => list.filter((p) => !list.includes(parentOf(p)) || parentOf(p) === '');
  return { missing: top(missing).sort(), extra: top(extra).sort(), types: types.sort() };
}
