import { describe, expect, it } from 'vitest';
import { withFlagHint } from './config-error.ts';

describe('withFlagHint', () => {
  const flags = [
    { path: ['dense'], flag: 'dense' },
    { path: ['dense', 'steps'], flag: 'dense-steps' },
    { path: ['lr'], flag: 'lr' },
  ];

  it('names the flag of the most specific path that is or encloses the line', () => {
    expect(withFlagHint('dense.steps: Too small', flags)).toBe('dense.steps: Too small (--dense-steps)');
    expect(withFlagHint('dense.recallSteps: Too small', flags)).toBe('dense.recallSteps: Too small (--dense)');
    expect(withFlagHint('lr: Too big', flags)).toBe('lr: Too big (--lr)');
  });

  it('leaves a line that no flag sets, and does not match on a shared prefix of a key', () => {
    expect(withFlagHint('seed: Invalid', flags)).toBe('seed: Invalid');
    expect(withFlagHint('lrWarmup: Invalid', flags)).toBe('lrWarmup: Invalid');
  });
});
