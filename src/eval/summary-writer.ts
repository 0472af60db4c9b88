import { z } from 'zod';

/**
 * Summary-writer swaps (method §8, paper Table 1): the acting policy stays fixed and only the
 * summaries come from another writer. A writer is named on the command line as
 *   self | oracle | null | lossy:P | lossy:P:G | checkpoint:PATH | llamacpp:FILE.gguf
 * (a llamacpp:FILE.gguf writer is a model writer like a checkpoint, run by llama.cpp: its spec is
 * { kind: 'checkpoint', path: 'llamacpp:FILE.gguf' } and the path resolves as `--policy` does.)
 * (lossy:P:G drops the goal with probability G instead of P / 2: the writer `crl sft --lossy-goal-p`
 * trains on, so a base can be evaluated under the summaries it was taught.)
 */
export type SummaryWriterSpec =
  | { kind: 'self' }
  | { kind: 'oracle' }
  | { kind: 'null' }
  | { kind: 'lossy'; p: number; goalP?: number }
  | { kind: 'checkpoint'; path: string };

export const SUMMARY_WRITER_KINDS = [
  'self',
  'oracle',
  'null',
  'lossy:P',
  'lossy:P:G',
  'checkpoint:PATH',
  'llamacpp:FILE.gguf',
] as const;

const LossyP = z.coerce.number().min(0).max(1);

/** Parses a writer name; a bad one throws a message listing the valid forms. */
export function parseSummaryWriter(text: string): SummaryWriterSpec {
  const valid = `valid summary writers: ${SUMMARY_WRITER_KINDS.join(', ')}`;
  if (text === 'self' || text === 'oracle' || text === 'null') return { kind: text };
  const colon = text.indexOf(':');
  const head = colon < 0 ? text : text.slice(0, colon);
  const arg = colon < 0 ? '' : text.slice(colon + 1);
  if (head === 'lossy') {
    const parts = arg.split(':');
    const ps = parts.map((x) => LossyP.safeParse(x));
    if (parts.length > 2 || parts.some((x) => x === '') || ps.some((x) => !x.success)) {
      throw new Error(
        `summary writer ${JSON.stringify(text)}: lossy needs a drop probability in [0, 1] and optionally a goal-drop probability, e.g. lossy:0.3 or lossy:0.4:0.4`,
      );
    }
    const [p, goalP] = ps.map((x) => x.data!);
    return goalP === undefined ? { kind: 'lossy', p: p! } : { kind: 'lossy', p: p!, goalP };
  }
  if (head === 'checkpoint' && arg !== '') return { kind: 'checkpoint', path: arg };
  if (head === 'llamacpp' && arg !== '') return { kind: 'checkpoint', path: text };
  throw new Error(`unknown summary writer ${JSON.stringify(text)}; ${valid}`);
}

export function formatSummaryWriter(spec: SummaryWriterSpec): string {
  switch (spec.kind) {
    case 'lossy':
      return spec.goalP === undefined ? `lossy:${spec.p}` : `lossy:${spec.p}:${spec.goalP}`;
    case 'checkpoint':
      return spec.path.startsWith('llamacpp:') ? spec.path : `checkpoint:${spec.path}`;
    default:
      return spec.kind;
  }
}
