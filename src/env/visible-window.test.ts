import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../contracts/index.ts';
import { readWindow } from './visible-window.ts';

const m = (role: ChatMessage['role'], content: string): ChatMessage => ({ role, content });

describe('readWindow', () => {
  it('splits head, steps and a trailing summary request', () => {
    const w = readWindow([
      m('system', 'you are an agent'),
      m('user', 'read all'),
      m('assistant', 'read'),
      m('observation', 'chunk 1 : set a 5'),
      m('user', 'summarize the task goal'),
    ]);
    expect(w.head).toEqual(['read', 'all']);
    expect(w.steps).toEqual([{ action: ['read'], observation: ['chunk', '1', ':', 'set', 'a', '5'] }]);
    expect(w.summaryRequest).toBe(true);
  });

  it('is not a summary request when the last turn is an observation', () => {
    const w = readWindow([
      m('user', 'continue from the summary : queries a'),
      m('assistant', 'read'),
      m('observation', 'end'),
    ]);
    expect(w.summaryRequest).toBe(false);
    expect(w.head).toEqual(['continue', 'from', 'the', 'summary', ':', 'queries', 'a']);
  });

  it('treats q_sum right after a rebuilt window with no tail as a summary request, not as head', () => {
    const w = readWindow([
      m('system', 's'),
      m('user', 'continue from the summary : queries a'),
      m('user', 'summarize the task goal'),
    ]);
    expect(w.summaryRequest).toBe(true);
    expect(w.head).toEqual(['continue', 'from', 'the', 'summary', ':', 'queries', 'a']);
  });
});
