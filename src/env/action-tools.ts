import { z } from 'zod';
import { ToolArgumentsError, type ActionTools, type ToolCall, type ToolSpec } from '../contracts/index.ts';
import { parseShellAction, SUBMIT } from './harbor/action.ts';
import { words } from './visible-window.ts';

/**
 * Families' actions as tools (docs/agent-format.md). The built-in families speak word actions
 * (`read`, `answer t throne`, `go north`, `read chunk 3`): each is a verb of fixed words followed
 * by arguments, so one declaration per verb gives its tool schema, the text a call stands for,
 * and the call an expert's text is written as.
 */

/** One parameter: a word, a whole number, one of a few words, or the rest of the words as a list. */
export type VerbParam =
  | { name: string; description: string; type: 'word' | 'integer' }
  | { name: string; description: string; type: 'enum'; values: readonly string[] }
  | { name: string; description: string; type: 'words' };

export interface VerbTool {
  /** The tool's name (snake_case). */
  name: string;
  description: string;
  /** The fixed words the action starts with (`['read', 'chunk']`). */
  words: readonly string[];
  /** Parameters in the order their words follow; a 'words' parameter only last. */
  params: readonly VerbParam[];
}

const WORD = /^\S+$/;

function paramSchema(p: VerbParam): Record<string, unknown> {
  switch (p.type) {
    case 'word':
      return { type: 'string', description: p.description };
    case 'integer':
      return { type: 'integer', description: p.description };
    case 'enum':
      return { type: 'string', enum: [...p.values], description: p.description };
    case 'words':
      return { type: 'array', items: { type: 'string' }, description: p.description };
  }
}

function paramZod(p: VerbParam): z.ZodType {
  switch (p.type) {
    case 'word':
      return z.string().regex(WORD, 'one word, no spaces');
    case 'integer':
      return z.number().int().min(0);
    case 'enum':
      return z.enum(p.values as [string, ...string[]]);
    case 'words':
      return z.array(z.string().regex(WORD, 'one word, no spaces'));
  }
}

/** The JSON-schema tool of a verb (what the system turn declares). */
function toolSpec(v: VerbTool): ToolSpec {
  return {
    type: 'function',
    function: {
      name: v.name,
      description: v.description,
      parameters: {
        type: 'object',
        properties: Object.fromEntries(v.params.map((p) => [p.name, paramSchema(p)])),
        required: v.params.map((p) => p.name),
      },
    },
  };
}

/** Checks a call's arguments against the tool's declared parameters; the message names what is wrong. */
function checkedArguments(tool: ToolSpec, schema: z.ZodType, args: unknown): Record<string, unknown> {
  const r = schema.safeParse(args);
  if (r.success) return r.data as Record<string, unknown>;
  const issue = r.error.issues[0]!;
  const where = issue.path.length > 0 ? `argument ${issue.path.join('.')}` : 'arguments';
  throw new ToolArgumentsError(`${tool.function.name}: ${where}: ${issue.message}`);
}

export function verbTools(verbs: readonly VerbTool[]): ActionTools {
  const specs = verbs.map(toolSpec);
  const schemas = verbs.map((v) => z.strictObject(Object.fromEntries(v.params.map((p) => [p.name, paramZod(p)]))));
  const byName = new Map(verbs.map((v, i) => [v.name, i]));
  return {
    tools: specs,
    toAction(call: ToolCall): string {
      const i = byName.get(call.name);
      if (i === undefined) throw new ToolArgumentsError(`no tool named ${JSON.stringify(call.name)}`);
      const v = verbs[i]!;
      const args = checkedArguments(specs[i]!, schemas[i]!, call.arguments);
      const parts = [...v.words];
      for (const p of v.params) {
        const a = args[p.name];
        parts.push(...(Array.isArray(a) ? a.map(String) : [String(a)]));
      }
      return parts.join(' ');
    },
    toCall(action: string): ToolCall {
      const ws = words(action);
      // Longest fixed prefix first: `read chunk 3` is read_chunk, not read.
      const order = verbs.map((v, i) => i).sort((a, b) => verbs[b]!.words.length - verbs[a]!.words.length);
      for (const i of order) {
        const v = verbs[i]!;
        if (!v.words.every((w, k) => ws[k] === w)) continue;
        const rest = ws.slice(v.words.length);
        const args: Record<string, unknown> = {};
        let k = 0;
        let fits = true;
        for (const p of v.params) {
          if (p.type === 'words') {
            args[p.name] = rest.slice(k);
            k = rest.length;
          } else if (k < rest.length) {
            args[p.name] = p.type === 'integer' ? Number(rest[k]) : rest[k];
            k++;
          } else fits = false;
        }
        if (!fits || k !== rest.length || !schemas[i]!.safeParse(args).success) continue;
        return { name: v.name, arguments: args };
      }
      throw new Error(`no tool expresses the action ${JSON.stringify(action)}`);
    },
  };
}

/** Shell tasks (shell-ledger, repo-repair, task folders): a command in the persistent shell, or submit. */
export const SHELL_TOOLS: ActionTools = (() => {
  const bash: ToolSpec = {
    type: 'function',
    function: {
      name: 'bash',
      description: 'Run a command in the persistent bash shell of the task; you see its output and exit code.',
      parameters: {
        type: 'object',
        properties: { command: { type: 'string', description: 'the command (it may span lines)' } },
        required: ['command'],
      },
    },
  };
  const submit: ToolSpec = {
    type: 'function',
    function: {
      name: 'submit',
      description: 'End your work on the task; the task is then checked.',
      parameters: { type: 'object', properties: {}, required: [] },
    },
  };
  const schemas: Record<string, z.ZodType> = {
    bash: z.strictObject({ command: z.string().refine((c) => c.trim() !== '', 'an empty command') }),
    submit: z.strictObject({}),
  };
  return {
    tools: [bash, submit],
    toAction(call: ToolCall): string {
      const schema = schemas[call.name];
      if (!schema) throw new ToolArgumentsError(`no tool named ${JSON.stringify(call.name)}`);
      const args = checkedArguments(call.name === 'bash' ? bash : submit, schema, call.arguments);
      // A command that reads `submit` is run as a command here: only the submit tool submits.
      return call.name === 'submit' ? SUBMIT : String(args.command);
    },
    toCall(action: string): ToolCall {
      const a = parseShellAction(action);
      if (a.kind === 'submit') return { name: 'submit', arguments: {} };
      if (a.kind === 'command') return { name: 'bash', arguments: { command: a.command } };
      throw new Error('an empty shell action is no call');
    },
  };
})();
