/**
 * Every bad setting of a command, found before anything starts and reported together (exit 2):
 * an operator fixes a unit file once, not once per mistake. Option values refused by their parser
 * are kept in place of the value, so that parsing goes on; the command's checks of files, roots
 * and patterns then add theirs, and one ConfigError carries them all, one per line.
 */
import fs from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import { ConfigError } from './common.js';
import { keepUsageErrors, usageErrors } from './usage-errors.js';

/** A value an option's parser refused: what was given, and why. */
class RefusedValue {
  constructor(
    readonly value: string,
    readonly why: string,
  ) {}
}

/**
 * Makes each option parser of `cmd` keep its refusal as the option's value instead of stopping
 * the parse at the first, and commander's own usage errors too (usage-errors.ts). The command's
 * action must then call `refusals` before using any value.
 */
export function keepRefusals(cmd: Command): Command {
  keepUsageErrors(cmd);
  for (const o of cmd.options) {
    const parse = o.parseArg;
    if (parse === undefined) continue;
    o.argParser((value: string, previous: unknown) => {
      try {
        return parse(value, previous);
      } catch (err) {
        if (err instanceof InvalidArgumentError) return new RefusedValue(value, err.message);
        throw err;
      }
    });
  }
  return cmd;
}

/** Whether an option's value is one its parser refused (checks that read it are then skipped). */
export function isRefused(value: unknown): boolean {
  return value instanceof RefusedValue;
}

/** The usage errors and refused values of a parsed command, each worded as commander words it. */
export function refusals(cmd: Command): string[] {
  const out: string[] = usageErrors(cmd);
  for (const o of cmd.options) {
    const v: unknown = cmd.getOptionValue(o.attributeName());
    if (!(v instanceof RefusedValue)) continue;
    out.push(
      cmd.getOptionValueSource(o.attributeName()) === 'env'
        ? `option '${o.flags}' value '${v.value}' from env '${o.envVar ?? ''}' is invalid. ${v.why}`
        : `option '${o.flags}' argument '${v.value}' is invalid. ${v.why}`,
    );
  }
  return out;
}

/** The messages of a start that cannot go on, gathered from checks that each stand alone. */
export class SettingErrors {
  private readonly messages: string[];

  constructor(first: readonly string[] = []) {
    this.messages = [...first];
  }

  add(...messages: readonly string[]): void {
    this.messages.push(...messages);
  }

  /** Runs one check and gives what it made; a ConfigError it throws is kept (each of its lines). */
  check<T>(run: () => T): T | undefined {
    let made: T | undefined;
    this.messages.push(...configErrorsOf(() => (made = run())));
    return made;
  }

  /** One ConfigError with every message, one per line, when there is any. */
  throwIfAny(): void {
    if (this.messages.length > 0) throw new ConfigError(this.messages.join('\n'));
  }
}

/** The lines of the ConfigError `run` throws; none when it returns. Any other error goes on. */
export function configErrorsOf(run: () => unknown): string[] {
  try {
    run();
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.message.split('\n');
  }
}

/** Why a file the agent must read at start cannot be read; undefined when it can. */
export function unreadableFile(flag: string, path: string | undefined): string | undefined {
  if (path === undefined || path === '') return undefined;
  try {
    const fd = fs.openSync(path, 'r');
    try {
      if (fs.fstatSync(fd).isDirectory()) return `${flag} ${path}: is a directory, not a file`;
      fs.readSync(fd, Buffer.alloc(1), 0, 1, 0);
    } finally {
      fs.closeSync(fd);
    }
    return undefined;
  } catch (err) {
    return `${flag} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
  }
}
