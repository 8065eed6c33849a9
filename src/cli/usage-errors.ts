/**
 * Commander's own usage errors (an unknown option, an option without its value, a stray word),
 * kept instead of ending the parse at the first: the command's action reports them with the rest
 * of its settings' errors, in one block (settings.ts). Commander's wording is kept, its "Did you
 * mean …?" included.
 */
import type { Command, Option, ParseOptionsResult } from 'commander';

/** The usage errors kept per command, in the order commander found them. */
const kept = new WeakMap<Command, string[]>();

/** Commander's methods that word a usage error and call error() (JavaScript, not in its typings). */
interface CommanderWording {
  unknownOption(flag: string): void;
  optionMissingArgument(option: Option): void;
}

/**
 * Makes `cmd` keep its usage errors: error() records instead of ending the parse, and every
 * unknown option is named, not the first alone (commander leaves the options after an unknown one
 * unparsed). Its action must then read `usageErrors` before using any value.
 */
export function keepUsageErrors(cmd: Command): Command {
  const errors: string[] = [];
  kept.set(cmd, errors);
  // Commander calls error() where it would stop; each caller it has for usage goes on when it returns.
  cmd.error = ((message: string) => void errors.push(worded(message))) as Command['error'];
  const parse = cmd.parseOptions.bind(cmd);
  cmd.parseOptions = (argv: string[]): ParseOptionsResult => {
    errors.length = 0; // a command parsed again starts afresh
    return parseAll(cmd, parse, argv);
  };
  return cmd;
}

/** The usage errors `cmd` kept during its parse (none when it keeps none). */
export function usageErrors(cmd: Command): string[] {
  return [...(kept.get(cmd) ?? [])];
}

/** Commander's message as one line without its "error: " (a suggestion follows on the same line). */
function worded(message: string): string {
  return message.replace(/^error: /, '').replace(/\n+/g, ' ');
}

/** Commander's parse, without a last option missing its value, that option named after the rest. */
function parseAll(cmd: Command, parse: (argv: string[]) => ParseOptionsResult, argv: string[]): ParseOptionsResult {
  const missing = lastWithoutValue(cmd, argv);
  const result = pastUnknowns(cmd, parse, missing === undefined ? argv : argv.slice(0, -1));
  if (missing !== undefined) wording(cmd).optionMissingArgument(missing);
  return result;
}

/**
 * Commander's parse, run again past each unknown option: the option is named (commander's
 * wording) and the parse goes on with what follows it. Where the command takes no operands, a word
 * right after an unknown option is taken as its value, so it is not named a second time as a stray
 * word.
 */
function pastUnknowns(cmd: Command, parse: (argv: string[]) => ParseOptionsResult, argv: string[]): ParseOptionsResult {
  const operands: string[] = [];
  let rest = argv;
  // Each round takes at least the unknown option off `rest`: bounded by its length.
  for (let round = 0; round <= argv.length; round++) {
    const parsed = parse(rest);
    operands.push(...parsed.operands);
    const [flag, next] = parsed.unknown;
    // None left, or help asked for: commander shows help (exit 0) before it looks at unknown options.
    if (flag === undefined || isHelp(cmd, flag)) return { operands, unknown: parsed.unknown };
    wording(cmd).unknownOption(flag);
    const takesValue = cmd.registeredArguments.length === 0 && next !== undefined && !next.startsWith('-');
    rest = parsed.unknown.slice(takesValue ? 2 : 1);
  }
  return { operands, unknown: [] };
}

function wording(cmd: Command): CommanderWording {
  return cmd as unknown as CommanderWording;
}

/** Whether `flag` asks for help (commander's help option is shown with the options but is not one of them). */
function isHelp(cmd: Command, flag: string): boolean {
  return cmd
    .createHelp()
    .visibleOptions(cmd)
    .some((o) => !cmd.options.includes(o) && (o.long === flag || o.short === flag));
}

/**
 * The option that ends `argv` needing a value it does not have (`… --sysfs-root`): left out of the
 * parse and named as commander names it, since commander would give it an empty value for the
 * checks to misread.
 */
function lastWithoutValue(cmd: Command, argv: string[]): Option | undefined {
  const named = (arg: string | undefined): Option | undefined =>
    cmd.options.find((o) => o.required && arg !== undefined && (o.long === arg || o.short === arg));
  // After an option that needs a value, the last word is that value, whatever it looks like.
  return named(argv.at(-2)) === undefined ? named(argv.at(-1)) : undefined;
}
