import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createProgress } from './progress.ts';

function lines(f: (p: ReturnType<typeof createProgress>) => void): string {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (d: Buffer) => (text += d.toString()));
  f(createProgress({ label: 'train', stream: stream as unknown as NodeJS.WriteStream, tty: false }));
  return text;
}

describe('progress lines (no terminal)', () => {
  it('says where a run starts, and that a resumed run whose iterations all ran has nothing left', () => {
    expect(lines((p) => p.start({ total: 6, first: 3 }))).toBe('[train] starting at iteration 3 of 6\n');
    expect(lines((p) => p.start({ total: 2, first: 3 }))).toBe('[train] all 2 iterations already done\n');
  });
});
