import { describe, expect, it } from 'vitest';
import { OutputCapture } from './output-capture.ts';

const M = '__CRL_DONE_abc_';

describe('OutputCapture', () => {
  it('finds a marker split across chunks, wherever the split falls, and hands back what follows it', () => {
    const stream = `hello\nworld\n${M}17__\nlater`;
    for (let cut = 0; cut <= stream.length; cut++) {
      const c = new OutputCapture(1000, [M]);
      const first = c.push(Buffer.from(stream.slice(0, cut)));
      const hit = first ?? c.push(Buffer.from(stream.slice(cut)));
      expect(hit).toMatchObject({ marker: M, code: 17 });
      expect(c.result()).toEqual({ text: 'hello\nworld', totalBytes: 11, cutBytes: 0 });
      if (first === null) expect(hit!.rest.toString()).toBe('later');
    }
  });

  it('ignores text that only looks like a marker of another nonce', () => {
    const c = new OutputCapture(1000, [M]);
    expect(c.push(Buffer.from('\n__CRL_DONE_xyz_0__\n'))).toBeNull();
    expect(c.push(Buffer.from(`\n${M}0__\n`))).toMatchObject({ code: 0 });
    expect(c.result().text).toBe('\n__CRL_DONE_xyz_0__\n');
  });

  it('keeps the head and the tail of long output, with a count of what was cut', () => {
    const c = new OutputCapture(400, [M]);
    const lines = Array.from({ length: 1000 }, (_, i) => `line ${i}\n`).join('');
    for (let i = 0; i < lines.length; i += 97) c.push(Buffer.from(lines.slice(i, i + 97)));
    c.push(Buffer.from(`\n${M}0__\n`));
    const r = c.result();
    expect(r.totalBytes).toBe(lines.length);
    expect(r.cutBytes).toBe(lines.length - 400);
    expect(r.text.startsWith('line 0\nline 1\n')).toBe(true);
    expect(r.text.endsWith('line 998\nline 999\n')).toBe(true);
    expect(r.text).toContain(`\n[... ${lines.length - 400} bytes of output cut ...]\n`);
  });

  it('decodes UTF-8 split across chunks', () => {
    const c = new OutputCapture(1000, [M]);
    const bytes = Buffer.from(`héllo ✓\n${M}0__\n`);
    for (const b of bytes) c.push(Buffer.from([b]));
    expect(c.result().text).toBe('héllo ✓');
  });
});
