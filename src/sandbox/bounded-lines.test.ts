import { describe, expect, it } from 'vitest';
import { BoundedLines } from './bounded-lines.ts';

describe('BoundedLines', () => {
  it('splits lines across chunks, keeping UTF-8 whole', () => {
    const l = new BoundedLines(64);
    const bytes = Buffer.from('SWEPT ab 3\nké', 'utf8');
    expect(l.push(bytes.subarray(0, 12))).toEqual([{ text: 'SWEPT ab 3', truncated: false }]);
    expect(l.push(Buffer.concat([bytes.subarray(12), Buffer.from('\n')]))).toEqual([{ text: 'ké', truncated: false }]);
  });

  it('holds at most the bound of a line without end, and marks it truncated when it ends', () => {
    const l = new BoundedLines(100);
    const chunk = Buffer.alloc(1 << 20, 'Z');
    for (let i = 0; i < 64; i++) expect(l.push(chunk)).toEqual([]);
    expect(l.heldBytes).toBe(100);
    const [long, next] = l.push(Buffer.from('\nREADY x\n'));
    expect(long).toEqual({ text: 'Z'.repeat(100), truncated: true });
    expect(next).toEqual({ text: 'READY x', truncated: false });
    expect(l.heldBytes).toBe(0);
  });
});
