/**
 * The entry stream (src/json/entries.ts) over one whole text, element by element (pulled): the
 * text is fed in slices until the next element ends. Tests only: the agent pushes the rdma tool's
 * chunks as they come.
 */
import { entryStream, type EntryShape, type JsonEntry } from '../../src/json/entries.js';
import type { JsonStream } from '../../src/json/stream.js';

export { JsonStreamError as JsonSyntaxError } from '../../src/json/stream.js';

export const END = Symbol('end of array');

const SLICE = 4096;

export class JsonArrayScanner {
  private readonly stream: JsonStream;
  private readonly queue: JsonEntry[] = [];
  private fed = 0;
  private ended = false;
  private keep: () => boolean = () => false;

  constructor(
    private readonly text: string,
    shape: EntryShape,
  ) {
    this.stream = entryStream({ shape, keep: () => this.keep(), onEntry: (e) => this.queue.push(e) });
  }

  /** The next element (built only when `keep()`, asked once there is one), or END after the array. */
  next(keep: () => boolean): JsonEntry | typeof END {
    this.keep = keep;
    while (this.queue.length === 0 && !this.ended) {
      if (this.fed < this.text.length) {
        const to = Math.min(this.text.length, this.fed + SLICE);
        this.stream.push(this.text.slice(this.fed, to));
        this.fed = to;
      } else {
        this.stream.end();
        this.ended = true;
      }
    }
    return this.queue.shift() ?? END;
  }
}
