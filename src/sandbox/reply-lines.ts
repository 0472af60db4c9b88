/**
 * The sandbox agent's reply channel: bytes in, whole lines out, in order. A line that arrives
 * before anyone waits is queued; `next` resolves null on timeout or once the channel is closed
 * (the sandbox exited), so a caller never waits on a dead process.
 */
export class ReplyLines {
  private buffer = '';
  private readonly queued: string[] = [];
  private waiters: ((line: string | null) => void)[] = [];
  private closed = false;

  push(data: Buffer): void {
    this.buffer += data.toString('utf8');
    let nl: number;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl);
      this.buffer = this.buffer.slice(nl + 1);
      const w = this.waiters.shift();
      if (w) w(line);
      else this.queued.push(line);
    }
  }

  next(timeoutMs: number): Promise<string | null> {
    const line = this.queued.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(null), timeoutMs);
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
