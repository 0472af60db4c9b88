import type { ToolCall } from '../../contracts/index.ts';

/** What a tool-call syntax is (tool-call-syntax.ts holds the registry of them). */

/** Why a turn's calls could not be read (counted per iteration as rollout/tool_call_errors/<cause>). */
export type CallProblem = 'bad_json' | 'not_a_call';

export interface ParsedCalls {
  /** Well-formed calls in order, with each call's character span in the text. */
  calls: { call: ToolCall; start: number; end: number }[];
  /** Blocks that looked like calls but were not well formed. */
  problems: { cause: CallProblem; detail: string; start: number; end: number }[];
}

/** The declared tools as a parser may read them (a syntax that writes values untyped needs their types). */
export type ToolSchemas = readonly { function: { name: string; parameters?: unknown } }[];

export interface ToolCallSyntax {
  readonly name: string;
  /** True when this template writes calls in this syntax (read from the template's text). */
  detect(template: string): boolean;
  /** Every call-shaped block of a turn's content (after any thinking block). */
  parse(text: string, tools?: ToolSchemas): ParsedCalls;
  /** Does this text hold the start of a call (a call inside a thinking block is an error)? */
  mentionsCall(text: string): boolean;
  /** What the template is rendered with besides messages, tools and the generation prompt (apply_chat_template's kwargs). */
  readonly templateKwargs?: Readonly<Record<string, unknown>>;
}
