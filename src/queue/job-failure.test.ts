import { describe, expect, it } from 'vitest';
import { failureOf, failureReason } from './job-failure.ts';

describe('a failed job names whose fault it was in its reason', () => {
  it('keeps the kind an error names, and reads a plain error as the environment', () => {
    const engine = Object.assign(new Error('every replica is down'), { faultKind: 'engine' });
    expect(failureReason(engine)).toBe('engine fault: every replica is down');
    expect(failureOf(failureReason(engine))).toEqual({ kind: 'engine', message: 'every replica is down' });
    expect(failureOf(failureReason(new Error('the task folder is gone')))).toEqual({
      kind: 'environment',
      message: 'the task folder is gone',
    });
  });

  it("reads a reason without a kind (BullMQ's own, an older worker's) as an environment fault, word for word", () => {
    expect(failureOf('job stalled more than allowable limit')).toEqual({
      kind: 'environment',
      message: 'job stalled more than allowable limit',
    });
  });
});
