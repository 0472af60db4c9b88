import { z } from 'zod';

/**
 * Summary-writer swaps (spec §8, paper Table 1): the acting policy stays fixed and only the
 * summaries come from another writer. A writer is named on the command line as
 *   self | oracle | null | lossy:P | checkpoint:PATH
 */
export type SummaryWriterSpec =
  | { kind: 'self' }
  | { kind: 'oracle' }
  | { kind: 'null' }
  | { kind: 'lossy'; p: number }
  | { kind: 'checkpoint'; path: string };

export const SUMMARY_WRITER_KINDS = ['self', 'oracle', 'null', 'lossy:P', 'checkpoint:PATH'] as const;

const LossyP = z.coerce.number().min(0).max(1);

/** Parses a writer name; a bad one throws a message listing the valid forms. */
export function parseSummaryWriter(text: string): SummaryWriterSpec {
  const valid = `valid summary writers: ${SUMMARY_WRITER_KINDS.join(', ')}`;
  if (text === 'self' || text === 'oracle' || text === 'null') return { kind: text };
  const colon = text.indexOf(':');
  const head = colon < 0 ? text : text.slice(0, colon);
  const arg = colon < 0 ? '' : text.slice(colon + 1);
  if (head === 'lossy') {
    const p = LossyP.safeParse(arg);
    if (!p.success || arg === '') throw new Error(`summary writer ${JSON.stringify(text)}: lossy needs a drop probability in [0, 1], e.g. lossy:0.3`);
    return { kind: 'lossy', p: p.data };
  }
  if (head === 'checkpoint' && arg !== '') return { kind: 'checkpoint', path: arg };
  throw new Error(`unknown summary writer ${JSON.stringify(text)}; ${valid}`);
}

export function formatSummaryWriter(spec: SummaryWriterSpec): string {
  switch (spec.kind) {
    case 'lossy':
      return `lossy:${spec.p}`;
    case 'checkpoint':
      return `checkpoint:${spec.path}`;
    default:
      return spec.kind;
  }
}
