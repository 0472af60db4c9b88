import type { EpisodeView, SegmentView, SummaryView } from '../api-schema.ts';
import { CREDIT_METRICS, creditColour, metricValues, scaleOf, type CreditMetric } from './credit-scale.ts';
import { go, type Route } from './route.ts';
import { TokenText, type Colouring } from './tokens.tsx';

type EpisodesRoute = Extract<Route, { page: 'episodes' }>;

function generated(seg: SegmentView): number {
  return seg.mask.reduce<number>((a, m) => a + m, 0);
}

/** One episode: header, time line of segments, then each window beside the summary that compressed it. */
export function EpisodeDetail({ episode, route }: { episode: EpisodeView; route: EpisodesRoute }) {
  const hasCredit = episode.segments.some((s) => s.credit !== null);
  const mode = hasCredit ? route.mode : 'mask';
  const all = episode.segments.flatMap((s) => (s.credit ? (metricValues(s.credit, route.metric) ?? []) : []));
  const colouring: Colouring = { mode, metric: route.metric, scale: scaleOf(all, route.metric) };
  const summaryAfter = new Map<number, SummaryView>(episode.summaries.map((s) => [s.window, s]));

  return (
    <article class="episode" data-testid="episode" data-episode-id={episode.episodeId}>
      <header class="ep-head">
        <h2>{episode.episodeId}</h2>
        <span class={`outcome ${episode.outcome}`}>{episode.outcome}</span>
        <span>reward {episode.reward}</span>
        <span>
          {episode.compactions}/{episode.maxWindows - 1} compactions
        </span>
        <span>{episode.steps} steps</span>
        <span>{episode.generatedTokens} generated tokens</span>
        <span>
          {episode.env} seed {episode.seed} · C {episode.contextWindow} · tokenizer {episode.tokenizer}
        </span>
      </header>
      <div class="modes">
        <button
          class={mode === 'mask' ? 'on' : ''}
          data-testid="mode-mask"
          onClick={() => go({ ...route, mode: 'mask' })}
        >
          Loss mask
        </button>
        <button
          class={mode === 'credit' ? 'on' : ''}
          data-testid="mode-credit"
          disabled={!hasCredit}
          title={hasCredit ? '' : 'no per-token credit saved for this episode (records from crl run have none)'}
          onClick={() => go({ ...route, mode: 'credit' })}
        >
          Credit
        </button>
        {mode === 'credit' && (
          <>
            <select
              data-testid="pick-metric"
              value={route.metric}
              onChange={(e) => go({ ...route, metric: (e.target as HTMLSelectElement).value as CreditMetric })}
            >
              {CREDIT_METRICS.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.label}
                </option>
              ))}
            </select>
            <Legend colouring={colouring} />
            {episode.credit && !episode.credit.policyUpdated && (
              <span class="note">critic warm-up: the policy did not train on this iteration</span>
            )}
          </>
        )}
        {mode === 'mask' && (
          <span class="note">
            <span class="tok gen">underlined</span>: generated in this segment (loss mask 1); the rest is context
          </span>
        )}
      </div>
      <Timeline episode={episode} />
      {episode.segments.map((seg, s) =>
        seg.kind === 'execution' ? (
          <section class="window" key={s}>
            <div class="exec" id={`seg-${s}`} data-segment={s} data-kind="execution">
              <h3>
                window {s / 2 + 1} · exec segment · {seg.pieces.length} tokens, {generated(seg)} generated · policy v
                {seg.policyVersion}
              </h3>
              <pre class="text">
                <TokenText seg={seg} from={0} to={seg.pieces.length} colouring={colouring} />
              </pre>
            </div>
            {summaryAfter.has(s) && (
              <SummaryCard summary={summaryAfter.get(s)!} seg={episode.segments[s + 1]!} colouring={colouring} />
            )}
          </section>
        ) : null,
      )}
    </article>
  );
}

function Timeline({ episode }: { episode: EpisodeView }) {
  return (
    <div class="timeline" data-testid="timeline">
      {episode.segments.map((seg, s) => {
        const n = seg.kind === 'summary' ? generated(seg) : seg.pieces.length;
        const label = seg.kind === 'summary' ? `sum ${(s + 1) / 2}` : `exec ${s / 2 + 1}`;
        return (
          <button
            key={s}
            class={`block ${seg.kind}`}
            style={{ flexGrow: Math.max(n, 8) }}
            data-segment={s}
            data-kind={seg.kind}
            title={`${label}: ${seg.pieces.length} tokens, ${generated(seg)} generated`}
            onClick={() => document.getElementById(`seg-${s}`)?.scrollIntoView({ behavior: 'smooth' })}
          >
            {label} · {n}
          </button>
        );
      })}
    </div>
  );
}

function SummaryCard(props: { summary: SummaryView; seg: SegmentView; colouring: Colouring }) {
  const { summary, seg } = props;
  const kept = summary.facts?.filter((f) => f.kept).length ?? 0;
  return (
    <aside class="summary" id={`seg-${summary.segment}`} data-segment={summary.segment} data-kind="summary">
      <h3>
        summary {summary.compaction} · compressed window {summary.window / 2 + 1}
        {summary.tailStepsKept !== null &&
          ` · tail ${summary.tailStepsKept} steps kept, ${summary.tailStepsDropped} dropped`}
      </h3>
      <div class="side-by-side">
        <div>
          <h4>actual (the policy's)</h4>
          <p class="summary-text" data-testid="summary-text">
            {summary.text}
          </p>
        </div>
        {summary.oracle !== null && (
          <div>
            <h4>oracle (what the family needs kept)</h4>
            <p class="oracle-text" data-testid="oracle-text">
              {summary.oracle}
            </p>
          </div>
        )}
      </div>
      {summary.facts && (
        <div class="facts" data-testid="facts">
          <span>
            kept {kept} of {summary.facts.length}:
          </span>
          {summary.facts.map((f, i) => (
            <span
              key={i}
              class={`fact ${f.kept ? 'kept' : 'dropped'} ${f.kind}`}
              data-kept={String(f.kept)}
              title={f.kind}
            >
              {f.clause}
            </span>
          ))}
        </div>
      )}
      <details open={props.colouring.mode === 'credit'}>
        <summary>summary segment tokens (the {seg.windowTokens}-token window it repeats is folded)</summary>
        <pre class="text">
          <TokenText seg={seg} from={seg.windowTokens} to={seg.pieces.length} colouring={props.colouring} />
        </pre>
      </details>
    </aside>
  );
}

function Legend({ colouring }: { colouring: Colouring }) {
  const { lo, hi } = colouring.scale;
  const steps = [0, 0.25, 0.5, 0.75, 1].map((t) => lo + t * (hi - lo));
  const back = (x: number) => (colouring.metric === 'ratio' ? Math.exp(x) : x);
  return (
    <span class="legend" data-testid="legend">
      {steps.map((x, i) => (
        <span key={i} style={{ background: creditColour(back(x), colouring.metric, colouring.scale) }}>
          {Number(back(x).toPrecision(2))}
        </span>
      ))}
    </span>
  );
}
