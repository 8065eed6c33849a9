/**
 * The bytes that delimit JSON values; in UTF-8 only ASCII bytes are ever structural.
 *
 * A const enum, so the compiler writes the numbers into the scanners' loops: read from another
 * module as constants, they cost the byte loops about a quarter of their speed.
 */
export const enum Byte {
  Quote = 0x22,
  Backslash = 0x5c,
  OpenBrace = 0x7b,
  CloseBrace = 0x7d,
  OpenBracket = 0x5b,
  CloseBracket = 0x5d,
  Comma = 0x2c,
  Colon = 0x3a,
  Space = 0x20,
  Newline = 0x0a,
  Return = 0x0d,
  Tab = 0x09,
}

export function isWhitespace(c: number): boolean {
  return c === Byte.Space || c === Byte.Newline || c === Byte.Return || c === Byte.Tab;
}
