import { glm45Syntax } from './glm45-syntax.ts';
import { hermesSyntax } from './hermes-syntax.ts';
import { llama3JsonSyntax } from './llama3-json-syntax.ts';
import type { ToolCallSyntax } from './tool-call-types.ts';

export type { CallProblem, ParsedCalls, ToolCallSyntax, ToolSchemas } from './tool-call-types.ts';

/**
 * Tool-call syntaxes (docs/agent-format.md): how a model's chat template writes a call in an
 * assistant turn, and the one parser for each. The syntax is chosen from the template itself
 * (a registry, not a branch per model); a template whose syntax is not here is refused by name.
 */

// GLM-4.5 writes <tool_call> as Hermes does, around another body: it is asked first.
const SYNTAXES: ToolCallSyntax[] = [glm45Syntax, hermesSyntax, llama3JsonSyntax];

/** A library user's syntax (a template the built-ins do not know). */
export function registerToolCallSyntax(syntax: ToolCallSyntax): void {
  if (SYNTAXES.some((s) => s.name === syntax.name)) throw new Error(`tool-call syntax ${syntax.name} is registered`);
  SYNTAXES.unshift(syntax);
}

/** The syntax a template writes calls in, or null when no registered one matches. */
export function toolCallSyntaxOf(template: string): ToolCallSyntax | null {
  return SYNTAXES.find((s) => s.detect(template)) ?? null;
}

export function knownToolCallSyntaxes(): string[] {
  return SYNTAXES.map((s) => s.name);
}
