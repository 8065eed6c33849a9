/**
 * The native fd reader (src/node/read/fd-native.ts) for tests. npm run build compiles it where a C
 * compiler is; without one the tests that need it are skipped with a message naming the packages,
 * and under CI they fail instead.
 */
import { loadFdReader, type FdReader } from '../../src/node/read/fd-native.js';

const load = loadFdReader();
if (load.reader === undefined && !process.env.CI)
  process.stderr.write(
    `\n!!! SKIPPING tests of the native fd reader (${load.why}): apt-get install -y gcc libc6-dev, then npm run build !!!\n\n`,
  );

/** Whether tests of the native reader run: always under CI (where they then fail if it did not load). */
export const nativeReaderTested: boolean = load.reader !== undefined || Boolean(process.env.CI);

/** The native reader; throws (under CI) where it did not load. */
export function nativeReader(): FdReader {
  if (load.reader === undefined) throw new Error(`the native fd reader did not load (CI is set): ${load.why}`);
  return load.reader;
}

/** The readers a scan is proved with: Node's fs always, the native reader where it is tested. */
export const FD_READERS: readonly (readonly [name: string, reader: () => FdReader | undefined])[] = [
  ['fs', () => undefined],
  ...(nativeReaderTested ? [['native', nativeReader] as const] : []),
];
