/**
 * A reader of the ttar text archives that prometheus/procfs and node_exporter keep their sysfs
 * fixtures in: `Directory: p`, `Path: p` followed by `Lines: n` and n lines of content (the last
 * one suffixed `EOF` when the file has no final newline, `NULLBYTE` standing for \0) or by
 * `SymlinkTo: target`, then `Mode: octal`; `#` lines between entries are comments.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Writes the archive's entries under `dest`, each path with `strip` removed from its front. */
export function extractTtar(archive: string, dest: string, strip: string): number {
  const lines = fs.readFileSync(archive, 'utf8').split('\n');
  let written = 0;
  let last: string | undefined;
  const target = (p: string): string => {
    if (!p.startsWith(strip)) throw new Error(`${archive}: ${p} is not under ${strip}`);
    return path.join(dest, p.slice(strip.length));
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line === '' || line.startsWith('#')) continue;
    const [key, value = ''] = splitHeader(line, archive, i);
    if (key === 'Directory') {
      last = target(value);
      fs.mkdirSync(last, { recursive: true });
    } else if (key === 'Path') {
      last = target(value);
      fs.mkdirSync(path.dirname(last), { recursive: true });
      const [next, arg = ''] = splitHeader(lines[++i] ?? '', archive, i);
      if (next === 'SymlinkTo') fs.symlinkSync(arg, last);
      else if (next === 'Lines') {
        const n = Number(arg);
        fs.writeFileSync(last, content(lines.slice(i + 1, i + 1 + n)));
        i += n;
      } else throw new Error(`${archive}:${i + 1}: expected Lines or SymlinkTo after Path`);
      written++;
    } else if (key === 'Mode') {
      if (last !== undefined && !fs.lstatSync(last).isSymbolicLink()) fs.chmodSync(last, parseInt(value, 8));
    } else throw new Error(`${archive}:${i + 1}: unknown header ${key}`);
  }
  return written;
}

function splitHeader(line: string, archive: string, i: number): [string, string] {
  const at = line.indexOf(': ');
  if (at < 0) throw new Error(`${archive}:${i + 1}: not a header: ${JSON.stringify(line)}`);
  return [line.slice(0, at), line.slice(at + 2)];
}

function content(lines: readonly string[]): string {
  if (lines.length === 0) return '';
  const last = lines[lines.length - 1] as string;
  const text = last.endsWith('EOF') ? [...lines.slice(0, -1), last.slice(0, -3)].join('\n') : `${lines.join('\n')}\n`;
  return text.replace(/NULLBYTE/g, '\0');
}
