import { describe, expect, it } from 'vitest';
import {
  FdNumbers,
  fdNumber,
  knownFds,
  LISTING_FDS,
  listingOf,
  listingSize,
  numbersBytes,
  sameNames,
} from '../../../src/node/read/fd-listing.js';

/** The names of fds `from` .. `to - 1`, as the kernel lists them. */
function range(from: number, to: number): string[] {
  return Array.from({ length: to - from }, (_, i) => String(from + i));
}

describe('fd names kept between cycles', () => {
  it('keeps a small table as its names joined, compared in order', () => {
    const names = ['0', '1', '2', '17'];
    const listing = listingOf(names, 0);
    expect(listing).toBe('0/1/2/17');
    expect(sameNames(listing, names)).toBe(true);
    expect(sameNames(listing, ['0', '1', '2', '1'])).toBe(false);
    expect(sameNames(listing, ['0', '1', '2', '17', '18'])).toBe(false);
    expect(sameNames(listing, ['0', '1', '2'])).toBe(false);
    expect(knownFds(listing)?.has('17')).toBe(true);
    expect(knownFds(listing)?.has('7')).toBe(false);
    expect(numbersBytes(listing)).toBe(0);
  });

  it('keeps a dense large table as one bit a number', () => {
    const names = range(0, LISTING_FDS + 1000);
    const listing = listingOf(names, Infinity);
    expect(typeof listing).not.toBe('string');
    expect(numbersBytes(listing)).toBe(((LISTING_FDS + 999) >>> 3) + 1);
    expect(sameNames(listing, names)).toBe(true);
    // Order does not matter to numbers; membership and count do.
    expect(sameNames(listing, [...names].reverse())).toBe(true);
    expect(sameNames(listing, [...names.slice(1), String(LISTING_FDS + 1000)])).toBe(false);
    expect(sameNames(listing, names.slice(1))).toBe(false);
    const known = knownFds(listing);
    expect(known?.size).toBe(names.length);
    expect(known?.has('0')).toBe(true);
    expect(known?.has(String(LISTING_FDS + 999))).toBe(true);
    expect(known?.has(String(LISTING_FDS + 1000))).toBe(false);
    expect(known?.has('999999999')).toBe(false);
  });

  it('keeps a sparse large table as its numbers sorted, four bytes each', () => {
    // An fd at every 1000th number: a bitmap would take 125 bytes an fd.
    const names = Array.from({ length: LISTING_FDS + 1 }, (_, i) => String(i * 1000));
    const listing = listingOf(names, Infinity);
    expect(listingSize(listing)).toBe(4 * names.length);
    expect(sameNames(listing, names)).toBe(true);
    expect(sameNames(listing, [...names.slice(0, -1), '1'])).toBe(false);
    const known = knownFds(listing);
    expect(known?.has('0')).toBe(true);
    expect(known?.has(String(LISTING_FDS * 1000))).toBe(true);
    expect(known?.has('999')).toBe(false);
    expect(known?.has(String(LISTING_FDS * 1000 + 1000))).toBe(false);
  });

  it('keeps a digest past the room given, or where a name is not an fd number', () => {
    const names = range(0, LISTING_FDS + 1);
    for (const listing of [listingOf(names, 100), listingOf([...names.slice(1), '007'], Infinity)]) {
      expect(typeof listing).toBe('string');
      expect(listingSize(listing)).toBeLessThan(64);
      expect(knownFds(listing)).toBeUndefined();
    }
    const digest = listingOf(names, 100);
    expect(sameNames(digest, names)).toBe(true);
    expect(sameNames(digest, [...names.slice(1), String(LISTING_FDS + 1)])).toBe(false);
  });

  it('reads fd numbers as the kernel writes them', () => {
    expect(fdNumber('0')).toBe(0);
    expect(fdNumber('1048575')).toBe(1048575);
    for (const bad of ['', '01', '-1', '1a', ' 1', '99999999999', String(2 ** 30)]) expect(fdNumber(bad)).toBe(-1);
    expect(FdNumbers.of(['1', '2', '1'])).toBeUndefined();
  });
});
