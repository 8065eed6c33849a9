/**
 * The tests' temporary directories (test/support/tmp.ts): one made in a test goes after that test,
 * one made in a beforeAll stays for every test of the file (an agent or a Prometheus started there
 * keeps its tree and storage) and goes after the file.
 */
import fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { tmpDir } from './support/tmp.js';

describe("a beforeAll's directory", () => {
  let dir: string;
  beforeAll(() => {
    dir = tmpDir();
    fs.writeFileSync(`${dir}/kept`, 'x');
  });

  it('is there in the first test', () => {
    expect(fs.existsSync(`${dir}/kept`)).toBe(true);
  });

  it('and still there in the next one', () => {
    expect(fs.existsSync(`${dir}/kept`)).toBe(true);
  });
});

describe("a test's directory", () => {
  let made: string | undefined;

  it('is made in the test', () => {
    made = tmpDir();
    expect(fs.existsSync(made)).toBe(true);
  });

  it('is gone in the next one', () => {
    expect(made).toBeDefined();
    expect(fs.existsSync(made as string)).toBe(false);
  });
});
