/**
 * Splits bytes from a sandbox into lines while holding at most `maxLineBytes` of an unfinished
 * line: what the sandbox writes is the agent's to choose, so a stream without newlines must not
 * grow the host's memory. A line longer than the bound is given as its first `maxLineBytes` bytes
 * with `truncated` set (the rest, up to its newline, is dropped), so a caller can refuse it.
 */
export interface SplitLine {
  text: string;
  truncated: boolean;
}

export class BoundedLines {
  private partial = '';
  private truncated = false;

  constructor(private readonly maxLineBytes: number) {}

  /** The lines that `data` completes, in order. */
  push(data: Buffer): SplitLine[] {
    const out: SplitLine[] = [];
    let text = data.toString('latin1');
    let nl: number;
    while ((nl = text.indexOf('\n')) >= 0) {
      this.take(text.slice(0, nl));
      out.push({ text: Buffer.from(this.partial, 'latin1').toString('utf8'), truncated: this.truncated });
      this.partial = '';
      this.truncated = false;
      text = text.slice(nl + 1);
    }
    this.take(text);
    return out;
  }

  /** Bytes held for the unfinished line (never more than the bound). */
  get heldBytes(): number {
    return this.partial.length;
  }

  private take(piece: string): void {
    const room = this.maxLineBytes - this.partial.length;
    if (piece.length > room) this.truncated = true;
    if (room > 0) this.partial += piece.slice(0, room);
  }
}
