/**
 * The relative links of the repository's Markdown pages, and the anchors GitHub gives their
 * headings: enough to tell a link that resolves from one that does not, without a renderer.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface MarkdownLink {
  readonly target: string;
  readonly line: number;
}

/** The lines outside fenced code blocks, with their 1-based numbers. */
function proseLines(markdown: string): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  let fence: string | undefined;
  markdown.split('\n').forEach((text, i) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(text)?.[1];
    if (marker && (fence === undefined || marker.startsWith(fence))) {
      fence = fence === undefined ? marker : undefined;
      return;
    }
    if (fence === undefined) out.push({ text, line: i + 1 });
  });
  return out;
}

/** A line without its inline code spans, whose brackets are not links. */
function withoutCode(text: string): string {
  return text.replace(/(`+)[\s\S]*?\1/g, '');
}

/** The anchor GitHub derives from a heading's text. */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** Every anchor a page offers: its headings' slugs (repeats numbered as GitHub does) and HTML ids. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { text } of proseLines(markdown)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(text)?.[1];
    if (heading !== undefined) {
      const slug = githubSlug(heading);
      const n = seen.get(slug) ?? 0;
      seen.set(slug, n + 1);
      out.add(n === 0 ? slug : `${slug}-${n}`);
    }
    for (const m of text.matchAll(/<a\s[^>]*(?:id|name)="([^"]+)"/g)) out.add(m[1] as string);
  }
  return out;
}

/** Inline links and images, and reference definitions, outside code. */
export function links(markdown: string): MarkdownLink[] {
  const out: MarkdownLink[] = [];
  for (const { text, line } of proseLines(markdown)) {
    const prose = withoutCode(text);
    for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
      out.push({ target: m[1] as string, line });
    const def = /^ {0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(prose);
    if (def) out.push({ target: def[1] as string, line });
  }
  return out;
}

/** Why a link of `file` (relative to `root`) does not resolve, or undefined when it does. */
export function linkProblem(root: string, file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // a URL: not ours to check here
  const hash = target.indexOf('#');
  const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const resolved = pathPart === '' ? path.join(root, file) : path.resolve(root, path.dirname(file), pathPart);
  const inRepo = path.relative(root, resolved);
  if (inRepo.startsWith('..') || path.isAbsolute(inRepo)) return 'points outside the repository';
  if (!fs.existsSync(resolved)) return `${inRepo} does not exist`;
  if (anchor === undefined) return undefined;
  if (!resolved.endsWith('.md')) return `#${anchor} on ${inRepo}, which is not a Markdown page`;
  return anchors(fs.readFileSync(resolved, 'utf8')).has(anchor) ? undefined : `${inRepo} has no #${anchor}`;
}

/** Every link of `file` that does not resolve, as `file:line target: why`. */
export function brokenLinks(root: string, file: string): string[] {
  const markdown = fs.readFileSync(path.join(root, file), 'utf8');
  return links(markdown).flatMap(({ target, line }) => {
    const why = linkProblem(root, file, target);
    return why === undefined ? [] : [`${file}:${line} ${target}: ${why}`];
  });
}
