import type { ChatMessage } from './chat.ts';

/**
 * Actions as tools (docs/agent-format.md): what an environment declares so that a policy can act
 * through its model's own tool calls. Environments keep speaking text (environment.ts); a family's
 * ActionTools translates between a call and the text action its environment understands.
 */

/** A JSON-schema object of a function's parameters, as OpenAI's function tools carry it. */
export interface ToolParameters {
  type: 'object';
  properties: Record<string, Record<string, unknown>>;
  required: string[];
}

/** One tool as chat templates receive it (`tools=[...]`): an OpenAI function schema. */
export interface ToolSpec {
  type: 'function';
  function: { name: string; description: string; parameters: ToolParameters };
}

/**
 * What a scripted policy says it is about to do, in a thinking block (the tools format with
 * thinking on): from the text it will write (an action or a summary) and the window it read.
 */
export type Reasoner = (options: {
  stage: 'act' | 'summarize';
  text: string;
  messages: readonly ChatMessage[];
}) => string;

/** A call as a parser reads it from a generated turn: the function's name and its arguments. */
export interface ToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** A call of a declared tool whose arguments do not fit its parameters (the agent's error). */
export class ToolArgumentsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolArgumentsError';
  }
}

/** An environment's actions as tools, and the translation both ways. */
export interface ActionTools {
  readonly tools: readonly ToolSpec[];
  /** The text action a call stands for; throws ToolArgumentsError for arguments that do not fit. */
  toAction(call: ToolCall): string;
  /** The call a text action (an expert's) is written as; throws for text no tool expresses. */
  toCall(action: string): ToolCall;
}
