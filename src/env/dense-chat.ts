import type { ChatMessage } from '../contracts/index.ts';
import type { Rng } from '../util/random.ts';
import type { DensePart } from './family.ts';
import type { TextPolicy } from '../contracts/index.ts';

/**
 * Builds a dense warm-up sequence (docs/sft.md) and the chat it stands for side by side, so a
 * family's scripted expert decides every supervised reply and summary on exactly the text the
 * model will read. Used by the dense forms that replay expert play (fog-courier, hop-search).
 */
export class DenseChat {
  private messages: ChatMessage[] = [];

  /** Starts a window with `instruction`; parts may already hold earlier episodes of the sequence. */
  constructor(
    private readonly expert: TextPolicy,
    private readonly rng: Rng,
    instruction: string,
    readonly parts: DensePart[] = [],
  ) {
    this.head(instruction);
  }

  /** The expert's next action on the chat so far (not added). */
  decide(): string {
    return this.expert(this.messages, this.rng);
  }

  /** An assistant turn: supervised (`reply`) or only read (`action`, e.g. an injected mistake). */
  act(text: string, supervised: boolean): void {
    this.parts.push(supervised ? { kind: 'reply', text } : { kind: 'action', text });
    this.messages.push({ role: 'assistant', content: text });
  }

  /** The expert's decision, added as a supervised reply. */
  reply(): string {
    const text = this.decide();
    this.act(text, true);
    return text;
  }

  observe(text: string): void {
    this.parts.push({ kind: 'observation', text });
    this.messages.push({ role: 'observation', content: text });
  }

  /** The expert's summary of the window (a user turn after the steps is q_sum), supervised. */
  summary(): string {
    const text = this.expert([...this.messages, { role: 'user', content: 'summarize' }], this.rng);
    this.parts.push({ kind: 'summary', text });
    return text;
  }

  /** A rebuilt window as after a compaction: `head` (the summary), then the tail steps, read only. */
  rebuild(head: string, tail: readonly (readonly [action: string, observation: string])[]): void {
    this.head(head);
    for (const [action, observation] of tail) {
      this.act(action, false);
      this.observe(observation);
    }
  }

  private head(text: string): void {
    this.parts.push({ kind: 'instruction', text });
    this.messages = [{ role: 'user', content: text }];
  }
}
