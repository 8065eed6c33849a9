/**
 * Instrument descriptors and observations: the plain-data contract between an
 * agent's rules and the telemetry pipeline. Nothing here imports OpenTelemetry,
 * so catalogues, rules and their tests stay SDK-free.
 */

export type MetricKind = 'counter' | 'gauge' | 'updowncounter' | 'histogram';

/**
 * One metric family, declared once in an agent's catalogue. `L` are the attribute keys every point
 * carries, `O` those an option adds to every point (none unless declared with `optionalLabels`).
 */
export interface MetricSpec<L extends string = string, O extends string = string> {
  /** OTLP name. Prometheus appends `_total` to counters. */
  readonly name: string;
  readonly kind: MetricKind;
  /** UCUM unit for OTLP (the Prometheus name already carries it, e.g. `_bytes`); empty for plain counts, since
   * a Collector translating to Prometheus would append `_ratio` to gauges of unit "1". */
  readonly unit: string;
  readonly description: string;
  /** Attribute keys every point of this family carries, in order. */
  readonly attributes: readonly L[];
  /** Attribute keys an option adds, all of them, to every point (the table lists them with the option). */
  readonly optional?: { readonly attributes: readonly O[]; readonly option: string };
  /** Explicit bucket boundaries, histograms only. */
  readonly buckets?: readonly number[];
  /** Every value some attribute keys take (declared with `closedValues`); the other keys are open. */
  readonly values?: ValueSets;
  /** The setting that turns the family on or off (declared with `switchedBy`); absent: always on. */
  readonly switchedBy?: Switch;
}

/** The closed value sets of a family's attributes, by key, each in the order the docs list them. */
export type ValueSets = Readonly<Partial<Record<string, readonly string[]>>>;

/**
 * The agent's option that turns a family on: `option value` (`--qp-counters observe`), the option
 * alone for a switch (`--accounting-limits`), or `value` as one item of a comma-separated list
 * (`licenses` in `--optional-collectors`).
 */
export interface Switch {
  /** The long flag, as the agent's command declares it. */
  readonly option: string;
  /** The value that turns the family on; absent for a switch that takes none. */
  readonly value?: string;
  /** The value is one item of the option's comma-separated list. */
  readonly listed?: boolean;
  /** The family is on when the operator sets nothing (the option's default turns it on). */
  readonly byDefault?: boolean;
}

export type Attributes = Readonly<Record<string, string>>;

/** A counter or gauge value at the current collection. */
export interface Point {
  readonly attributes: Attributes;
  /** bigint for counters that may exceed 2^53: kept exact until serialisation. */
  readonly value: number | bigint;
  /** Counters only: when this series started counting (ms since epoch). */
  readonly startTimeMs?: number;
}

export interface HistogramPoint {
  readonly attributes: Attributes;
  readonly startTimeMs: number;
  readonly count: number;
  readonly sum: number;
  /** Per-bucket counts, one more than the spec's boundaries (the last is +Inf). */
  readonly bucketCounts: readonly number[];
}

/** Every point of one family at one collection. */
export type Family =
  | { readonly spec: MetricSpec & { kind: 'counter' | 'gauge' | 'updowncounter' }; readonly points: readonly Point[] }
  | { readonly spec: MetricSpec & { kind: 'histogram' }; readonly points: readonly HistogramPoint[] };

/**
 * A family whose points are made afresh each time they are iterated, so that a family of 100k
 * series is never held whole: the Prometheus rendering consumes it point by point, and only an
 * OTLP reader makes an array of it.
 */
export interface LazyFamily {
  readonly spec: MetricSpec & { kind: 'counter' | 'gauge' | 'updowncounter' };
  readonly lazy: Iterable<Point>;
}

export type AnyFamily = Family | LazyFamily;

/** The family with its points in an array (a lazy family's made now). */
export function materialized(fam: AnyFamily): Family {
  return 'lazy' in fam ? { spec: fam.spec, points: [...fam.lazy] } : fam;
}

/** The Prometheus exposition name of a family. */
export function prometheusName(spec: MetricSpec): string {
  return spec.kind === 'counter' && !spec.name.endsWith('_total') ? `${spec.name}_total` : spec.name;
}

/**
 * Declares a family in a catalogue, keeping its kind and its attribute keys as literal types, so
 * that points built with `point` must carry exactly those keys.
 */
export function defineMetric<K extends MetricKind, const L extends string>(
  kind: K,
  name: string,
  unit: string,
  attributes: readonly L[],
  description: string,
  buckets?: readonly number[],
): MetricSpec<L, never> & { kind: K } {
  return buckets
    ? { kind, name, unit, attributes, description, buckets }
    : { kind, name, unit, attributes, description };
}

/** The family with keys that `option` adds to every point when it is on. */
export function optionalLabels<S extends MetricSpec<string, never>, const O extends string>(
  spec: S,
  attributes: readonly O[],
  option: string,
): Omit<S, 'optional'> & MetricSpec<S['attributes'][number], O> {
  return { ...spec, optional: { attributes, option } };
}

/**
 * The family with the values some of its keys take, all of them: a point or event giving such a key
 * any other value does not compile (a value from a plain `string` included), and the docs list them.
 * Sets declared before for other keys are kept.
 */
export function closedValues<S extends MetricSpec, const V extends { readonly [K in KeysOf<S>]?: readonly string[] }>(
  spec: S,
  values: V,
): S & { readonly values: V } {
  return { ...spec, values: { ...spec.values, ...values } };
}

/** The family, exported only while `sw` is set (by the operator, or by its default). */
export function switchedBy<S extends MetricSpec>(spec: S, sw: Switch): S {
  return { ...spec, switchedBy: sw };
}

/** The same switch on every family of a record (a sub-collector's, an option's). */
export function allSwitchedBy<const R extends Readonly<Record<string, MetricSpec>>>(sw: Switch, specs: R): R {
  const entries = Object.entries(specs).map(([k, s]) => [k, switchedBy(s, sw)]);
  return Object.fromEntries(entries) as unknown as R;
}

/** The type of a value of key `K`: its declared set's members, or any string where the key is open. */
type ValueOf<S extends MetricSpec, K extends string> =
  NonNullable<S['values']> extends infer V
    ? K extends keyof V
      ? V[K] extends readonly (infer T extends string)[]
        ? T
        : string
      : string
    : string;

/**
 * The attributes a point of the family carries: every required key, the optional ones or none,
 * each with a value of its closed set where it has one.
 */
export type AttributesOf<S extends MetricSpec> =
  S extends MetricSpec<infer L, infer O> ? Readonly<{ [K in L]: ValueOf<S, K> } & { [K in O]?: ValueOf<S, K> }> : never;

/** Every key a point of the family may carry. */
type KeysOf<S extends MetricSpec> = S extends MetricSpec<infer L, infer O> ? L | O : never;

/**
 * The attributes `A` given for a point of `S`, refused when they carry a key `S` does not declare.
 * An object literal alone is checked for extra keys; this also catches those that arrive through
 * a spread (`{ ...owner, limit }`) or a variable. Attributes typed `AttributesOf<S>` for a generic
 * `S` (helpers building points of any family) pass as they are.
 */
export type ExactAttributes<S extends MetricSpec, A> = A &
  ([keyof A] extends [keyof AttributesOf<S>] ? unknown : { readonly [K in Exclude<keyof A, KeysOf<S>>]: never });

/** A point of the family: a key it does not declare, or a missing one, does not compile. */
export function point<S extends MetricSpec, A extends AttributesOf<S>>(
  _spec: S,
  attributes: ExactAttributes<S, A>,
  value: number | bigint,
  startTimeMs?: number,
): Point {
  return startTimeMs === undefined
    ? { attributes: attributes as Attributes, value }
    : { attributes: attributes as Attributes, value, startTimeMs };
}

/**
 * A catalogue must not declare a name twice, nor an attribute twice within a family, nor a value set
 * that is empty, repeats a value or belongs to no key of the family.
 */
export function checkCatalogue(specs: readonly MetricSpec[]): void {
  const seen = new Set<string>();
  for (const spec of specs) {
    if (seen.has(spec.name)) throw new Error(`metric ${spec.name} declared twice`);
    seen.add(spec.name);
    const keys = [...spec.attributes, ...(spec.optional?.attributes ?? [])];
    if (new Set(keys).size !== keys.length) {
      throw new Error(`metric ${spec.name} repeats an attribute key`);
    }
    for (const [key, set] of Object.entries(spec.values ?? {})) {
      if (!keys.includes(key)) throw new Error(`metric ${spec.name} declares values of ${key}, not one of its keys`);
      if (!set?.length || new Set(set).size !== set.length)
        throw new Error(`metric ${spec.name} declares an empty set or a repeated value of ${key}`);
    }
    if (!/^[a-z_][a-z0-9_]*$/.test(spec.name))
      throw new Error(`metric name ${spec.name} is not a valid Prometheus name`);
  }
}

/**
 * Something that happened between two collections (a node failed, an outage
 * ended after N seconds, GPU seconds accrued): recorded into SDK synchronous
 * instruments (counter: add; histogram: observe), which accumulate it.
 */
export interface MetricEvent {
  readonly spec: MetricSpec & { kind: 'counter' | 'histogram' };
  readonly value: number;
  readonly attributes: Attributes;
}

/** An event of the family: like `point`, a key it does not declare, or a missing one, does not compile. */
export function event<S extends MetricSpec & { kind: 'counter' | 'histogram' }, A extends AttributesOf<S>>(
  spec: S,
  attributes: ExactAttributes<S, A>,
  value: number,
): MetricEvent {
  return { spec, value, attributes: attributes as Attributes };
}
