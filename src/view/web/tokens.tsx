import type { ComponentChild } from 'preact';
import { ROLES, type SegmentView } from '../api-schema.ts';
import { creditColour, metricValues, type CreditMetric } from './credit-scale.ts';

export interface Colouring {
  mode: 'mask' | 'credit';
  metric: CreditMetric;
  scale: { lo: number; hi: number };
}

function fmt(x: number | null | undefined): string {
  return x === null || x === undefined ? '—' : Number(x.toPrecision(4)).toString();
}

/**
 * A segment's tokens, from `from` to `to`, as text: one span per token so the loss mask (and, in
 * the credit view, each generated token's value) is visible. Role classes colour the turn text.
 */
export function TokenText(props: { seg: SegmentView; from: number; to: number; colouring: Colouring }) {
  const { seg, colouring } = props;
  // j-th generated token of the segment, for the credit arrays.
  let g = 0;
  for (let t = 0; t < props.from; t++) g += seg.mask[t]!;
  const values = seg.credit ? metricValues(seg.credit, colouring.metric) : null;
  const spans: ComponentChild[] = [];
  for (let t = props.from; t < props.to; t++) {
    const role = seg.roles ? ROLES[seg.roles[t]!] : 'plain';
    const gen = seg.mask[t] === 1;
    // A turn marker right after another (`<eot> <asst>`) starts a new line: one turn per line.
    if (seg.roles && t > props.from && role === 'marker' && ROLES[seg.roles[t - 1]!] === 'marker' && !gen)
      spans.push('\n');
    const full = seg.pieces[t]!;
    // Leading whitespace belongs between tokens: keep it out of the highlighted span.
    const lead = gen ? (/^\s*/.exec(full)?.[0] ?? '') : '';
    const piece = full.slice(lead.length);
    if (lead) spans.push(lead);
    if (!gen) {
      spans.push(
        <span key={t} class={`tok ${role}`}>
          {seg.roles && spans.at(-1) === '\n' ? piece.trimStart() : piece}
        </span>,
      );
      continue;
    }
    const j = g++;
    const v = values?.[j];
    const style =
      colouring.mode === 'credit' && v !== undefined
        ? { background: creditColour(v, colouring.metric, colouring.scale) }
        : undefined;
    const c = seg.credit;
    const title = c
      ? `A_hat ${fmt(c.advantage[j])} · used ${fmt(c.used?.[j])} · G ${fmt(c.return[j])} · V ${fmt(c.value?.[j])} · logp ${fmt(c.oldLogprob[j])} · H ${fmt(c.entropy[j])} · ratio ${fmt(c.ratio[j])}`
      : `generated · sampler logp ${fmt(seg.samplerLogprob[j])}`;
    spans.push(
      <span
        key={t}
        class={`tok gen ${role}`}
        data-gen="1"
        data-value={v === undefined ? undefined : String(v)}
        style={style}
        title={title}
      >
        {piece}
      </span>,
    );
  }
  return <span class="tokens">{spans}</span>;
}
