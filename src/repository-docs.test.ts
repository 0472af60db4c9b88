/**
 * The repository speaks for itself: every relative link in README.md and docs/ resolves (file and,
 * for markdown targets, heading anchor), and nothing in the code, docs or committed reports names a
 * work period, an issue number, a machine path or a file outside the repository.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const THIS_FILE = fileURLToPath(import.meta.url);
const ROOT = resolve(dirname(THIS_FILE), '..');

function walk(dir: string, keep: (path: string) => boolean): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p, keep));
    else if (keep(p)) out.push(p);
  }
  return out;
}

/** GitHub's heading anchors: lower case, punctuation and symbols dropped, spaces to hyphens, -N for repeats. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(markdown).split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

function withoutFences(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '');
}

function withoutCodeBlocks(markdown: string): string {
  return withoutFences(markdown).replace(/`[^`\n]*`/g, '');
}

/** Relative link targets of a markdown file: `[text](target)`, outside code. */
function relativeLinks(markdown: string): string[] {
  const out: string[] = [];
  for (const m of withoutCodeBlocks(markdown).matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    out.push(target);
  }
  return out;
}

describe('repository documentation', () => {
  const markdownFiles = [join(ROOT, 'README.md'), ...walk(join(ROOT, 'docs'), (p) => p.endsWith('.md'))];

  it('every relative link in README.md and docs/ points at a file or heading that exists', () => {
    const broken: string[] = [];
    for (const file of markdownFiles) {
      const text = readFileSync(file, 'utf8');
      for (const link of relativeLinks(text)) {
        const [pathPart, anchor] = link.split('#') as [string, string | undefined];
        const target = pathPart === '' ? file : resolve(dirname(file), decodeURIComponent(pathPart));
        const where = `${relative(ROOT, file)} -> ${link}`;
        if (!existsSync(target)) {
          broken.push(`${where}: no such file`);
          continue;
        }
        if (anchor && target.endsWith('.md') && !headingAnchors(readFileSync(target, 'utf8')).has(anchor)) {
          broken.push(`${where}: no heading with that anchor`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('headingAnchors follows GitHub: symbols dropped, repeats numbered', () => {
    const a = headingAnchors(
      '# §4 Advantages\n## full-x: `full` on kv, 3 seeds\n## A\n## A\n```\n# not a heading\n```',
    );
    expect([...a]).toEqual(['4-advantages', 'full-x-full-on-kv-3-seeds', 'a', 'a-1']);
  });

  it('names no work period, issue number, machine path or file outside the repository', () => {
    // Built from parts so that this file does not match itself.
    const forbidden = [
      new RegExp(['sessions?', '[ -][0-9]'].join(''), 'i'),
      new RegExp(['issues?', ' #?[0-9]'].join(''), 'i'),
      new RegExp(['/', 'tmp/[a-z]'].join(''), 'i'),
      new RegExp(['shared/', '(spec|seed)'].join(''), 'i'),
      new RegExp(['\\.\\./', 'shared'].join('')),
      new RegExp(['/work/', '(wt|main|shared|runs)'].join('')),
    ];
    const files = [
      join(ROOT, 'README.md'),
      ...walk(join(ROOT, 'docs'), (p) => /\.(md|html|svg|json|jsonl)$/.test(p)),
      ...walk(join(ROOT, 'src'), (p) => p.endsWith('.ts') && p !== THIS_FILE),
      ...walk(join(ROOT, 'bench'), (p) => /\.(ts|mts|js|mjs)$/.test(p)),
      ...walk(join(ROOT, 'scripts'), () => true),
    ];
    const hits: string[] = [];
    for (const file of files) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          for (const re of forbidden) {
            const m = re.exec(line);
            if (m) hits.push(`${relative(ROOT, file)}:${i + 1}: "${m[0]}"`);
          }
        });
    }
    expect(hits).toEqual([]);
  });
});
