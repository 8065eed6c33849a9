/**
 * Glue between the byte-level splitter and the element decoders: decodes a list response
 * (`/jobs/`, `/nodes/`) from a byte stream without ever holding the whole body, and returns the
 * same `Decoded<T>` as the whole-body decoders.
 */
import type { Decoded, ItemResult } from '../../model.js';
import { guarded, ItemCollector } from './envelope.js';
import { JsonArraySplitter, JsonStreamError } from '../../../json/splitter.js';
import { parseSlurmJson } from '../json/slurm-json.js';
import { loopTurn, Slice } from '../../../steps.js';

/**
 * An element decoder. One that sets `members` reads no other top-level member of an element:
 * the stream reader then parses only those (see JsonArraySplitterOptions.keepMembers).
 */
export type ElementDecoder<T> = ((element: unknown) => ItemResult<T>) & { readonly members?: readonly string[] };

export interface StreamDecodeOptions<T> {
  /** Refuse a single element larger than this many bytes (see JsonArraySplitterOptions). */
  readonly maxElementBytes?: number;
  /** Sees each decoded element before the next is read. */
  readonly onItem?: (item: T) => void;
  /** How long decoding runs before it gives the event loop a turn (steps.ts; tests give 0). */
  readonly sliceMs?: number;
}

/**
 * Feeds `source` through a splitter on `arrayKey`, parses and decodes each element as it
 * arrives. An element that is not valid JSON is skipped and counted, like a malformed one; a body
 * that is broken at the top level (not an object, truncated) gives a `malformed_json` error.
 */
export async function decodeListStream<T>(
  source: AsyncIterable<Uint8Array>,
  arrayKey: string,
  decodeItem: ElementDecoder<T>,
  opts: StreamDecodeOptions<T> = {},
): Promise<Decoded<T>> {
  let collector = new ItemCollector<T>();
  const splitter = new JsonArraySplitter({
    arrayKey,
    ...(opts.maxElementBytes !== undefined ? { maxElementBytes: opts.maxElementBytes } : {}),
    ...(decodeItem.members !== undefined ? { keepMembers: decodeItem.members } : {}),
    onArrayRestart: () => {
      collector = new ItemCollector<T>();
    },
    onElement: (bytes) => {
      let value: unknown;
      try {
        value = parseSlurmJson(quoteLargeIds(bytes.toString('utf8')));
      } catch (err) {
        collector.skip(`element is not valid JSON: ${(err as Error).message}`);
        return;
      }
      const decoded = guarded(decodeItem, value);
      if (decoded.ok) opts.onItem?.(decoded.item);
      collector.add(decoded);
    },
  });
  // Chunks already buffered arrive without a turn of the event loop between them (each read is a
  // microtask), and decoding is slower than loopback: one go could decode megabytes while scrapes
  // and timers wait. A turn every slice bounds that to about one slice and one chunk.
  const slice = new Slice(opts.sliceMs);
  try {
    for await (const chunk of source) {
      splitter.write(chunk);
      if (slice.due()) await loopTurn();
    }
    const result = splitter.end();
    return collector.finish(result.members, result.arrayFound, arrayKey);
  } catch (err) {
    if (!(err instanceof JsonStreamError)) throw err;
    return { ok: false, kind: 'malformed_json', message: `${arrayKey}: ${err.message}`, errors: [], meta: {} };
  }
}

/**
 * A job id (`job_id`, `array_job_id`, also inside a `{set, number}` struct) of 16 digits or more,
 * quoted before parsing: JSON.parse would round one beyond 2^53 to a neighbouring id. The
 * decoders read ids as text. A key spelt inside a string value has escaped quotes and never
 * matches.
 */
const LARGE_ID = /("(?:array_)?job_id"\s*:\s*(?:\{[^{}]*?"number"\s*:\s*)?)(\d{16,})(?![\d.eE])/g;

export function quoteLargeIds(text: string): string {
  return text.replace(LARGE_ID, '$1"$2"');
}
