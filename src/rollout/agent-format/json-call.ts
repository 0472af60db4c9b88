import type { ToolCall } from '../../contracts/index.ts';
import type { CallProblem } from './tool-call-types.ts';

/**
 * The JSON pieces the syntaxes share: a call object (`{"name": ..., "arguments": {...}}`, Hermes;
 * `"parameters"` in Llama-3.1's) and the end of one JSON value in a text that goes on after it.
 */

/** `{"name": ..., "arguments"|"parameters": {...}}` read from a JSON text. */
export function jsonCall(body: string): { call: ToolCall } | { cause: CallProblem; detail: string } {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch (e) {
    return { cause: 'bad_json', detail: (e as Error).message };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return { cause: 'not_a_call', detail: 'the call is not a JSON object' };
  const o = v as Record<string, unknown>;
  let args = o.arguments ?? o.parameters;
  // Some models write the arguments as a JSON string (OpenAI's wire format does).
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch (e) {
      return { cause: 'bad_json', detail: `arguments: ${(e as Error).message}` };
    }
  }
  if (typeof o.name !== 'string' || o.name === '') return { cause: 'not_a_call', detail: 'no "name" string' };
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    return { cause: 'not_a_call', detail: `no "${'parameters' in o ? 'parameters' : 'arguments'}" object` };
  return { call: { name: o.name, arguments: args as Record<string, unknown> } };
}

/**
 * Where the JSON object or array starting at `from` ends (one past its closing bracket), or -1
 * when the text ends first. Brackets inside strings do not count; the value itself is not checked.
 */
export function jsonValueEnd(text: string, from: number): number {
  let depth = 0;
  let inString = false;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}
