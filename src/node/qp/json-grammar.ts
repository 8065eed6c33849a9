/**
 * The states of the streaming JSON array scanner (json-scan.ts): its tokens, the frames of its
 * nesting stack and JSON's number grammar, kept apart so that the scanner reads as its steps.
 */
/** A kept field of an element: a string, a number as its text, an array of numbers, or anything else. */
export type JsonField =
  | { readonly kind: 'string'; readonly text: string }
  | { readonly kind: 'number'; readonly raw: string }
  | { readonly kind: 'numbers'; readonly list: readonly number[]; readonly length: number }
  | { readonly kind: 'other' };

export const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
export const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
export const isHex = (c: number): boolean => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
export const SIMPLE_ESCAPES: Readonly<Record<number, string>> = {
  0x22: '"',
  0x5c: '\\',
  0x2f: '/',
  0x62: '\b',
  0x66: '\f',
  0x6e: '\n',
  0x72: '\r',
  0x74: '\t',
};

/** Tokens handed from the lexer to the frames. */
export const enum Tok {
  Open = 1, // [
  Close, // ]
  OpenObj, // {
  CloseObj, // }
  Colon,
  Comma,
  Str,
  Num,
  Lit,
}

/** What a frame of the nesting stack expects next. */
export const enum Want {
  Start, // the top frame's '['
  First, // a value (a key in an object) or the close
  Item, // a value (a key) after a comma
  Colon,
  Value, // an object's value after its colon
  Next, // a comma or the close
  Done,
}

export const enum Kind {
  Top,
  Skip,
  Object,
  Numbers,
}

/** An open container: what it expects and what it builds. */
export interface Frame {
  readonly kind: Kind;
  readonly isObject: boolean;
  readonly depth: number;
  want: Want;
  // Top: whether the element in progress is kept, and is a kept object.
  kept: boolean;
  keptObject: boolean;
  // Object: the fields kept, those left out, the key in progress and whether its value is kept.
  fields: Map<string, JsonField> | undefined;
  extraFields: number;
  key: string | undefined;
  keepField: boolean;
  // Numbers: the numbers kept, how many items, whether all were numbers.
  list: number[] | undefined;
  length: number;
  onlyNumbers: boolean;
}

export function frame(kind: Kind, isObject: boolean, depth: number): Frame {
  return {
    kind,
    isObject,
    depth,
    want: kind === Kind.Top ? Want.Start : Want.First,
    kept: false,
    keptObject: false,
    // Every frame has the same fields in the same order: one shape for the hot paths.
    fields: kind === Kind.Object ? new Map<string, JsonField>() : undefined,
    extraFields: 0,
    keepField: false,
    key: undefined,
    list: kind === Kind.Numbers ? [] : undefined,
    length: 0,
    onlyNumbers: true,
  };
}

/** Lexer states between chunks. */
export const enum Lex {
  Between,
  Str,
  StrEscape,
  StrUnicode,
  Num,
  Lit,
}

/** Number grammar states (JSON's): which characters may follow. */
export const enum NumAt {
  Start,
  Minus,
  Zero,
  Int,
  Dot,
  Frac,
  Exp,
  ExpSign,
  ExpInt,
}

/** Whether the next string (or number) token's text is needed at `f`. */
export function wantText(f: Frame, isString: boolean): boolean {
  if (f.kind === Kind.Object) return f.want === Want.Value ? f.keepField : isString;
  return f.kind === Kind.Numbers && !isString;
}

export const PUNCTUATION: Readonly<Record<number, Tok>> = {
  0x5b: Tok.Open,
  0x5d: Tok.Close,
  0x7b: Tok.OpenObj,
  0x7d: Tok.CloseObj,
  0x3a: Tok.Colon,
  0x2c: Tok.Comma,
};

/** The number state after character `c`, or undefined when `c` ends the number. */
export function stepNumber(at: NumAt, c: number): NumAt | undefined {
  const digit = isDigit(c);
  const exp = c === 0x65 || c === 0x45;
  switch (at) {
    case NumAt.Start:
      return c === 0x2d ? NumAt.Minus : c === 0x30 ? NumAt.Zero : digit ? NumAt.Int : undefined;
    case NumAt.Minus:
      return c === 0x30 ? NumAt.Zero : digit ? NumAt.Int : undefined;
    case NumAt.Zero:
    case NumAt.Int:
      if (digit && at === NumAt.Int) return NumAt.Int;
      return c === 0x2e ? NumAt.Dot : exp ? NumAt.Exp : undefined;
    case NumAt.Dot:
    case NumAt.Frac:
      if (digit) return NumAt.Frac;
      return exp && at === NumAt.Frac ? NumAt.Exp : undefined;
    case NumAt.Exp:
      return c === 0x2b || c === 0x2d ? NumAt.ExpSign : digit ? NumAt.ExpInt : undefined;
    default:
      return digit ? NumAt.ExpInt : undefined;
  }
}
