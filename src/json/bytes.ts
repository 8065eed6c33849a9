/**
 * The bytes JSON's grammar looks at; in UTF-8 only ASCII bytes are ever structural.
 *
 * A const enum, so the compiler writes the numbers into the scanners' loops: read from another
 * module as constants, they cost the byte loops about a quarter of their speed.
 */
export const enum Byte {
  Quote = 0x22,
  Backslash = 0x5c,
  Slash = 0x2f,
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
  Minus = 0x2d,
  Plus = 0x2b,
  Dot = 0x2e,
  Zero = 0x30,
  Nine = 0x39,
  LowerE = 0x65,
  UpperE = 0x45,
  LowerU = 0x75,
  LowerT = 0x74,
  LowerF = 0x66,
  LowerN = 0x6e,
}

export function isWhitespace(c: number): boolean {
  return c === Byte.Space || c === Byte.Newline || c === Byte.Return || c === Byte.Tab;
}

export function isDigit(c: number): boolean {
  return c >= Byte.Zero && c <= Byte.Nine;
}

export function isHex(c: number): boolean {
  return isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

/** The characters a backslash may escape (besides `u`, which four hex digits follow). */
export function isSimpleEscape(c: number): boolean {
  return (
    c === Byte.Quote ||
    c === Byte.Backslash ||
    c === Byte.Slash ||
    c === 0x62 || // b
    c === Byte.LowerF ||
    c === Byte.LowerN ||
    c === 0x72 || // r
    c === Byte.LowerT
  );
}

/** Ends a scalar written without quotes (a number, true, false, null): what may follow one. */
export function endsScalar(c: number): boolean {
  return c === Byte.Comma || c === Byte.CloseBracket || c === Byte.CloseBrace || isWhitespace(c);
}
