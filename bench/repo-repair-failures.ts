/**
 * Why repo-repair episodes fail (docs/results/README.md): reads the sampled episodes a training run
 * rendered as text (`<run>/samples/iter-NNNNNN.txt`, two episodes per iteration by default) and
 * sorts each by what its first edit did, against the failing test's comment (`# f(a, b) should
 * return E`) and the numbered `def f(` line a read showed before the edit:
 *
 * - the edit came before any read showed `def f(` (the line was guessed);
 * - the def was read, and the edit's line (the def's next line) and expression were right or wrong;
 * - no edit, no failing test read, or an edit not of the form the task asks for.
 *
 * Reads count in whichever window they happened, so a def read before a compaction counts as read.
 *
 * A second table is the decision after each step: the kind of action the policy chose (test run,
 * grep, read, edit, submit) after each kind of step, a read of the module split by whether it
 * showed `def f(`, in the first window and in windows resumed from a summary. It reads the same
 * for the design that read the module on until the def showed and for the one that greps for it.
 *
 *   node --import tsx bench/repo-repair-failures.ts [--iterations FIRST-LAST] RUN_DIR|RECORDS.jsonl...
 *
 * Markdown to stdout: each category's count among failed and among successful episodes, then the
 * decisions. `--iterations` keeps the
 * samples of those training iterations only (e.g. 1-2: the base, before the first policy update).
 * A `.jsonl` input is `crl run`'s episode records (every episode, not two per iteration), e.g.
 * `crl run --policy BASE_RUN --env repo-repair --episodes 96 --out base.jsonl`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_TOKENIZER, loadTokenizer } from '../src/model/tokenizer/load-tokenizer.ts';
import { createChatLayout, DEFAULT_CHAT_TEMPLATES, type ChatLayout } from '../src/rollout/chat-layout.ts';
import { readRecordsFile } from '../src/rollout/record-file.ts';
import { renderEpisode } from '../src/rollout/render.ts';

const EDIT = /^assistant {3}sed -i '(\d+)s\/\.\*\/ {4}return (.*)\/' /m;
/** The failing test's comment as the test run shows it: the function and what it should return. */
const SPEC = /# (\w+)\(a, b\) should return ([^\n]*)/;

function category(episode: string): string {
  const spec = SPEC.exec(episode);
  const at = episode.indexOf("assistant   sed -i '");
  if (at < 0) return 'no edit';
  if (!spec) return 'edit before the failing test was read';
  const [, fn, expected] = spec;
  const def = new RegExp(`(\\d+)\\tdef ${fn}\\(`).exec(episode.slice(0, at));
  if (!def) return 'edit before the def was read';
  const edit = EDIT.exec(episode.slice(at));
  if (!edit) return 'edit not of the asked form';
  const line = Number(edit[1]) === Number(def[1]) + 1 ? 'right' : 'wrong';
  const expr = edit[2]!.trim() === expected!.trim() ? 'right' : 'wrong';
  return `def read; line ${line}, expression ${expr}`;
}

/** An action's kind by how it starts; a read of the failing test's module is split by whether it showed `def f(`. */
const NEXT_KINDS = [
  'test run',
  'grep',
  'read showing the def',
  'read not showing it',
  'edit',
  'submit',
  'other',
] as const;
type Kind = (typeof NEXT_KINDS)[number];

function kindOf(action: string, def: RegExp): Kind {
  if (action.startsWith('python3 -m pytest')) return 'test run';
  if (action.startsWith('grep ')) return 'grep';
  if (action.startsWith('cat -n ')) return def.test(action) ? 'read showing the def' : 'read not showing it';
  if (action.startsWith('sed -i')) return 'edit';
  if (action.startsWith('submit')) return 'submit';
  return 'other';
}

/**
 * Each decision the policy made after a step: per execution segment (the text repeats a window's
 * kept steps as context), the pairs whose second action the policy generated, as (kind of the step
 * before, kind of the action chosen). The step before includes its observation, so a read is
 * split by what it showed: an agent that reads on only while the def has not shown, or edits only
 * after a read that showed it, tells the two apart.
 */
function decisions(episode: string): { window: 'first window' | 'resumed'; after: Kind; next: Kind }[] {
  const spec = SPEC.exec(episode);
  if (!spec) return [];
  const def = new RegExp(`\\d+\\tdef ${spec[1]}\\(`);
  const out: ReturnType<typeof decisions> = [];
  for (const segment of episode.split(/\n(?=== segment \d+: )/)) {
    if (!/^== segment \d+: execution/.test(segment)) continue;
    const generated = (/\ngenerated: (.*)/.exec(segment)?.[1] ?? '').match(/\[/g)?.length ?? 0;
    const actions = segment
      .split(/\n(?=assistant {3})/)
      .filter((a) => a.startsWith('assistant   '))
      .map((a) => a.slice('assistant   '.length));
    for (let i = Math.max(0, actions.length - generated - 1); i + 1 < actions.length; i++) {
      out.push({
        window: segment.startsWith('== segment 0:') ? 'first window' : 'resumed',
        after: kindOf(actions[i]!, def),
        next: kindOf(actions[i + 1]!, def),
      });
    }
  }
  return out;
}

function parseArgs(argv: string[]): { runs: string[]; first: number; last: number } {
  const at = argv.indexOf('--iterations');
  if (at < 0) return { runs: argv, first: 1, last: Infinity };
  const m = /^(\d+)-(\d+)$/.exec(argv[at + 1] ?? '');
  if (!m) throw new Error('--iterations takes FIRST-LAST, e.g. 1-2');
  return { runs: argv.filter((_, i) => i !== at && i !== at + 1), first: Number(m[1]), last: Number(m[2]) };
}

let args: ReturnType<typeof parseArgs>;
try {
  args = parseArgs(process.argv.slice(2));
} catch (e) {
  process.stderr.write(`${(e as Error).message}\n`);
  process.exit(2);
}
const { runs } = args;
if (runs.length === 0) {
  process.stderr.write(
    'usage: node --import tsx bench/repo-repair-failures.ts [--iterations FIRST-LAST] RUN_DIR|RECORDS.jsonl...\n',
  );
  process.exit(2);
}

const layouts = new Map<string, ChatLayout>();
/** The runtime's default layout for a tokenizer, built once per tokenizer. */
function layoutOf(tokenizer: string): ChatLayout {
  let layout = layouts.get(tokenizer);
  if (!layout) {
    layout = createChatLayout({ tokenizer: loadTokenizer(tokenizer), templates: DEFAULT_CHAT_TEMPLATES });
    layouts.set(tokenizer, layout);
  }
  return layout;
}

/** The episodes of a run directory's sampled text, or of a `crl run` records file rendered the same way. */
function episodesOf(input: string): string[] {
  if (input.endsWith('.jsonl'))
    return readRecordsFile(input).map((r) => renderEpisode(r, layoutOf(r.tokenizer ?? DEFAULT_TOKENIZER)));
  const dir = join(input, 'samples');
  const files = readdirSync(dir).filter((f) => {
    const it = /^iter-(\d+)\.txt$/.exec(f);
    return it !== null && Number(it[1]) >= args.first && Number(it[1]) <= args.last;
  });
  return files.flatMap((file) => readFileSync(join(dir, file), 'utf8').split(/\n(?=episode \S+ {2}env )/));
}

const counts = new Map<string, { failure: number; success: number }>();
const decided = new Map<string, Record<Kind, number>>();
let episodes = 0;
for (const run of runs) {
  for (const ep of episodesOf(run)) {
    const outcome = /outcome (success|failure)/.exec(ep.slice(0, 300))?.[1] as 'success' | 'failure' | undefined;
    if (!outcome) continue;
    episodes++;
    for (const d of decisions(ep)) {
      const key = `${d.window}: after ${d.after}`;
      const row = decided.get(key) ?? (Object.fromEntries(NEXT_KINDS.map((k) => [k, 0])) as Record<Kind, number>);
      row[d.next]++;
      decided.set(key, row);
    }
    const c = category(ep);
    const row = counts.get(c) ?? { failure: 0, success: 0 };
    row[outcome]++;
    counts.set(c, row);
  }
}
const total = { failure: 0, success: 0 };
for (const r of counts.values()) {
  total.failure += r.failure;
  total.success += r.success;
}
const pct = (n: number, of: number) => (of === 0 ? '—' : `${((100 * n) / of).toFixed(1)}%`);
process.stdout.write(`${episodes} sampled episodes of ${runs.length} run(s)\n\n`);
process.stdout.write('| first edit | failed | % of failed | succeeded |\n|---|---|---|---|\n');
for (const [c, r] of [...counts].sort((a, b) => b[1].failure - a[1].failure))
  process.stdout.write(`| ${c} | ${r.failure} | ${pct(r.failure, total.failure)} | ${r.success} |\n`);
process.stdout.write(`\n| step before | ${NEXT_KINDS.join(' | ')} |\n|---|${NEXT_KINDS.map(() => '---|').join('')}\n`);
for (const [after, r] of [...decided].sort((a, b) => a[0].localeCompare(b[0]))) {
  const n = NEXT_KINDS.reduce((sum, k) => sum + r[k], 0);
  process.stdout.write(`| ${after} | ${NEXT_KINDS.map((k) => `${r[k]} (${pct(r[k], n)})`).join(' | ')} |\n`);
}
