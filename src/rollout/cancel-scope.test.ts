import { describe, expect, it } from 'vitest';
import { CancelScope } from './cancel-scope.ts';

describe('CancelScope', () => {
  it('aborts the calls in flight with the first reason, and later calls at once', () => {
    const scope = new CancelScope();
    const a = scope.enter();
    const b = scope.enter();
    b.release(); // b ended before the cancel: its signal stays as it was
    expect(scope.inFlight).toBe(1);
    scope.cancel(new Error('first'));
    scope.cancel(new Error('second'));
    expect(a.signal.aborted).toBe(true);
    expect((a.signal.reason as Error).message).toBe('first');
    expect(b.signal.aborted).toBe(false);
    const late = scope.enter();
    expect(late.signal.aborted).toBe(true);
    expect(scope.reason?.message).toBe('first');
    expect(scope.inFlight).toBe(0);
  });

  it('keeps nothing from released calls', () => {
    const scope = new CancelScope();
    for (let i = 0; i < 1000; i++) scope.enter().release();
    expect(scope.inFlight).toBe(0);
  });
});
