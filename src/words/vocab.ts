/**
 * The built-in tasks' closed vocabulary (< 256 tokens). Environments, experts and templates emit
 * only these words; a vocabulary-closure test checks it. Order is part of the checkpoint format:
 * append new words at the end of WORDS, never reorder.
 */

/** Special tokens: chat layout markers (rollout/chat-layout.ts) and padding. */
export const SPECIALS = ['<pad>', '<bos>', '<sys>', '<user>', '<asst>', '<obs>', '<eot>', '<cut>', '\n'] as const;

/** Integers 0..63 as single tokens (keys, values, ids, counts). */
export const NUMBERS = Array.from({ length: 64 }, (_, i) => String(i));

/** Single letters, for names built from letters. */
export const LETTERS = Array.from({ length: 26 }, (_, i) => String.fromCharCode(97 + i));

export const PUNCTUATION = [':', ',', '.', '?', '=', '-', '(', ')', '[', ']'] as const;

/** Words used by templates and tasks. Append only. */
export const WORDS = [
  // templates (system prompt, summary instruction q_sum, resume turn u_resume)
  'you',
  'are',
  'an',
  'agent',
  'summarize',
  'summary',
  'progress',
  'so',
  'far',
  'continue',
  'from',
  'context',
  'task',
  'goal',
  'facts',
  'keep',
  'needed',
  'the',
  'to',
  'of',
  'and',
  'in',
  'is',
  'with',
  'at',
  'on',
  'for',
  'no',
  'yes',
  'none',
  'done',
  'ok',
  'error',
  'unknown',
  'step',
  'steps',
  'left',
  'then',
  'all',
  'not',
  'found',
  'end',
  // generic actions and observations
  'read',
  'answer',
  'set',
  'del',
  'value',
  'key',
  'query',
  'queries',
  'chunk',
  'filler',
  'more',
  'go',
  'take',
  'drop',
  'room',
  'item',
  'items',
  'here',
  'exits',
  'north',
  'south',
  'east',
  'west',
  'deliver',
  'carry',
  'carrying',
  'target',
  'search',
  'open',
  'doc',
  'docs',
  'results',
  'question',
  'who',
  'what',
  'where',
  'correct',
  'wrong',
  'invalid',
  'action',
  'count',
  'add',
  'total',
  'sum',
  // task suite (src/env/, docs/tasks.md): fog-courier look/summary words, hop-search relations
  'look',
  'path',
  'back',
  'boss',
  'friend',
  'pet',
  'home',
  'rival',
  'coach',
] as const;

export const VOCAB: readonly string[] = [...SPECIALS, ...NUMBERS, ...LETTERS, ...PUNCTUATION, ...WORDS];
