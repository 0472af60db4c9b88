import { describe, expect, it } from 'vitest';
import { formatSummaryWriter, parseSummaryWriter } from './summary-writer.ts';

describe('parseSummaryWriter', () => {
  it('parses every form and round-trips', () => {
    for (const s of ['self', 'oracle', 'null', 'lossy:0.3', 'lossy:0.4:0.1', 'checkpoint:runs/a/ckpt']) {
      expect(formatSummaryWriter(parseSummaryWriter(s))).toBe(s);
    }
    expect(parseSummaryWriter('lossy:0.25')).toEqual({ kind: 'lossy', p: 0.25 });
    expect(parseSummaryWriter('lossy:0.4:1')).toEqual({ kind: 'lossy', p: 0.4, goalP: 1 });
  });
  it('rejects bad names with the valid list', () => {
    expect(() => parseSummaryWriter('gpt')).toThrow(
      /valid summary writers: self, oracle, null, lossy:P, lossy:P:G, checkpoint:PATH/,
    );
    expect(() => parseSummaryWriter('lossy:2')).toThrow(/\[0, 1\]/);
    expect(() => parseSummaryWriter('lossy')).toThrow(/lossy:0.3/);
    for (const bad of ['lossy:0.3:', 'lossy:0.3:1.5', 'lossy:0.3:0.1:0.1', 'lossy::0.2'])
      expect(() => parseSummaryWriter(bad)).toThrow(/goal-drop probability/);
  });
});
