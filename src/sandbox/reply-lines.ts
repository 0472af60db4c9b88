import { BoundedLines } from './bounded-lines.ts';
import { timeoutAfterPoll } from './timeout-after-poll.ts';

/** Longest reply line kept (replies are a word, an id and a number). */
const MAX_REPLY_BYTES = 256;

/**
 * The sandbox agent's reply channel: bytes in, whole lines out, in order. A line that arrives
 * before anyone waits is queued; `next` resolves null on timeout or once the channel is closed
 * (the sandbox exited), so a caller never waits on a dead process. A line over MAX_REPLY_BYTES
 * is given as `BAD` (it cannot be a reply), and memory stays bounded whatever arrives.
 */
export class ReplyLines {
  private readonly lines = new BoundedLines(MAX_REPLY_BYTES);
  private readonly queued: string[] = [];
  private waiters: ((line: string | null) => void)[] = [];
  private closed = false;

  push(data: Buffer): void {
    for (const { text, truncated } of this.lines.push(data)) {
      if (text === '' && !truncated) continue; // replies start on a line of their own (shell-script.ts)
      const line = truncated ? 'BAD' : text;
      const w = this.waiters.shift();
      if (w) w(line);
      // Nobody asked: the first such line already fails the next request, so a few are enough.
      else if (this.queued.length < 16) this.queued.push(line);
    }
  }

  next(timeoutMs: number): Promise<string | null> {
    const line = this.queued.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve) => {
      // A reply already in the pipe after a pause of this process is read first (done is idempotent).
      const timer = timeoutAfterPoll(() => done(null), timeoutMs);
      const done = (l: string | null): void => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve(l);
      };
      this.waiters.push(done);
    });
  }

  /** No more lines will come: every waiter gets null. */
  close(): void {
    this.closed = true;
    for (const w of this.waiters.splice(0)) w(null);
  }
}
