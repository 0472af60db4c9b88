import { describe, expect, it } from 'vitest';
import { waitFor } from './wait-for.ts';

describe('waitFor', () => {
  it('resolves with the first truthy value once the condition holds', async () => {
    let calls = 0;
    const value = await waitFor(() => (++calls >= 3 ? `after ${calls}` : null), { what: 'three calls', intervalMs: 1 });
    expect(value).toBe('after 3');
    expect(calls).toBe(3);
  });

  it('awaits async conditions and treats a throwing one as not yet true', async () => {
    let calls = 0;
    const value = await waitFor(
      async () => {
        if (++calls < 2) throw new Error('not ready');
        return calls;
      },
      { what: 'a second call', intervalMs: 1 },
    );
    expect(value).toBe(2);
  });

  it('rejects after the deadline, naming what never happened and the last error', async () => {
    await expect(waitFor(() => false, { what: 'the impossible', timeoutMs: 30, intervalMs: 5 })).rejects.toThrow(
      /timed out after 30 ms waiting for the impossible$/,
    );
    await expect(
      waitFor(
        () => {
          throw new Error('boom');
        },
        { what: 'x', timeoutMs: 10, intervalMs: 5 },
      ),
    ).rejects.toThrow(/waiting for x \(last error: boom\)/);
  });
});
