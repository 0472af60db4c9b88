/**
 * Collects one command's output from the sandbox's output stream until its end marker
 * (`\n<marker><exit code>__\n`), keeping at most `cap` bytes: the first 3/4 and the last 1/4,
 * with a line saying how many bytes were cut between them. Markers are searched in a small
 * window that spans chunk boundaries, so cost stays linear in the output however long it is.
 */
export interface CapturedOutput {
  /** The kept output, decoded as UTF-8 (invalid bytes replaced), the cut marker included. */
  text: string;
  /** Bytes the command printed in all. */
  totalBytes: number;
  /** Bytes left out of `text`. */
  cutBytes: number;
}

export interface MarkerHit {
  /** Which of the watched markers ended the output. */
  marker: string;
  code: number;
  /** Bytes that followed the marker's line in the same chunk (output of whatever runs next). */
  rest: Buffer;
}

export class OutputCapture {
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer = Buffer.alloc(0);
  /** Bytes received but not yet known to be output (they might start a marker). */
  private pending: Buffer = Buffer.alloc(0);
  private total = 0;
  private readonly patterns: { marker: string; re: RegExp }[];
  private readonly longest: number;

  constructor(
    private readonly cap: number,
    markers: readonly string[],
  ) {
    this.patterns = markers.map((marker) => ({ marker, re: new RegExp(`\\n${escape(marker)}(\\d+)__\\n`) }));
    this.longest = Math.max(...markers.map((m) => m.length)) + 16; // "\n" + digits + "__\n"
  }

  get bytes(): number {
    return this.total + this.pending.length;
  }

  /** Adds a chunk; returns the hit when the chunk completes a marker (and stops collecting). */
  push(chunk: Buffer): MarkerHit | null {
    const buf = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    // latin1 maps bytes 1:1 to characters, so string offsets are byte offsets.
    const text = buf.toString('latin1');
    let best: { at: number; end: number; marker: string; code: number } | null = null;
    for (const { marker, re } of this.patterns) {
      const m = re.exec(text);
      if (m && (best === null || m.index < best.at)) {
        best = { at: m.index, end: m.index + m[0].length, marker, code: Number(m[1]) };
      }
    }
    if (best) {
      this.keep(buf.subarray(0, best.at));
      this.pending = Buffer.alloc(0);
      return { marker: best.marker, code: best.code, rest: Buffer.from(buf.subarray(best.end)) };
    }
    const hold = Math.min(buf.length, this.longest);
    this.keep(buf.subarray(0, buf.length - hold));
    this.pending = Buffer.from(buf.subarray(buf.length - hold));
    return null;
  }

  /** The output so far (what is still pending counts as output: no marker came). */
  result(): CapturedOutput {
    const pending = this.pending;
    this.pending = Buffer.alloc(0);
    this.keep(pending);
    const headText = Buffer.concat(this.head).toString('utf8');
    const cut = this.total - this.headBytes - this.tail.length;
    const text =
      cut > 0 ? `${headText}\n[... ${cut} bytes of output cut ...]\n${this.tail.toString('utf8')}` : headText;
    return { text, totalBytes: this.total, cutBytes: Math.max(0, cut) };
  }

  private keep(bytes: Buffer): void {
    if (bytes.length === 0) return;
    this.total += bytes.length;
    const headCap = Math.floor((this.cap * 3) / 4);
    let rest = bytes;
    if (this.headBytes < headCap) {
      const take = Math.min(headCap - this.headBytes, rest.length);
      this.head.push(Buffer.from(rest.subarray(0, take)));
      this.headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0) return;
    const tailCap = this.cap - headCap;
    this.tail = Buffer.from(
      Buffer.concat([this.tail, rest.subarray(Math.max(0, rest.length - tailCap))]).subarray(-tailCap),
    );
  }
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
