/** [start, end) of each run of generated tokens (loss mask 1) in a segment. */
export function generatedSpans(mask: readonly number[]): [number, number][] {
  const spans: [number, number][] = [];
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] !== 1 || (i > 0 && mask[i - 1] === 1)) continue;
    let j = i;
    while (j < mask.length && mask[j] === 1) j++;
    spans.push([i, j]);
  }
  return spans;
}
