/**
 * The rdma tool's JSON read from one whole text (tests and benchmarks only): the agent feeds its
 * readers the tool's output chunk by chunk (qp-source.ts), these feed them a string in
 * PAUSE_CHARS slices, pausing between two, as a stand-in for the chunks.
 */
import {
  CounterNames,
  counterReader,
  linkModeReader,
  MAX_READING_BYTES,
  resourceReader,
  type LinkMode,
  type Parsed,
  type QpCounter,
  type QpLimits,
  type QpResource,
  type QpStreamReader,
} from '../../src/node/qp/qp-parse.js';
import { failed, ok, type Read } from '../../src/node/read/result.js';

/** Characters fed between two pauses. */
const PAUSE_CHARS = 1 << 18;

/** A whole text through a reader, pausing every PAUSE_CHARS. */
function* readText<T>(json: string, reader: QpStreamReader<T>): Generator<void, Read<Parsed<T>>> {
  if (json.length > MAX_READING_BYTES) return failed('too_large', `reading over ${MAX_READING_BYTES} bytes`);
  for (let at = 0; at < json.length; at += PAUSE_CHARS) {
    reader.push(json.slice(at, at + PAUSE_CHARS));
    if (at + PAUSE_CHARS < json.length) yield;
  }
  return reader.end();
}

/** A whole text of `statistic qp show`. */
export function counterEntries(json: string, limits: QpLimits): Generator<void, Read<Parsed<QpCounter>>> {
  return readText(json, counterReader(limits));
}

export function resourceEntries(json: string, limits: QpLimits): Generator<void, Read<Parsed<QpResource>>> {
  return readText(json, resourceReader(limits));
}

export function linkModeEntries(json: string, limits: QpLimits): Generator<void, Read<Parsed<LinkMode>>> {
  return readText(json, linkModeReader(limits));
}

/** Runs a reader to its end at once. */
export function drain<T>(g: Generator<void, T>): T {
  for (;;) {
    const r = g.next();
    if (r.done) return r.value;
  }
}

const items = <T>(r: Read<Parsed<T>>): Read<T[]> => (r.ok ? ok(r.value.items) : r);

/** The counters of a reading, without the node's links or dropped counts. */
export function parseQpCounters(json: string): Read<QpCounter[]> {
  return items(drain(counterEntries(json, { names: new CounterNames() })));
}

export function parseQpResources(json: string): Read<QpResource[]> {
  return items(drain(resourceEntries(json, { names: new CounterNames() })));
}

export function parseLinkModes(json: string): Read<LinkMode[]> {
  return items(drain(linkModeEntries(json, { names: new CounterNames() })));
}
