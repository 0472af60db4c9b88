/**
 * Seeded pseudo-random generator (SplitMix32-style mixing over a 32-bit state).
 * Every source of randomness in the project takes one of these as an argument, so a
 * run is reproducible from its seed (house style: no global random state).
 */
export class Rng {
  private state: number;

  constructor(seed: number) {
    if (!Number.isFinite(seed)) throw new Error(`Rng seed must be a finite number, got ${seed}`);
    this.state = (Math.floor(seed) ^ 0x9e3779b9) >>> 0;
  }

  /** Uniform 32-bit unsigned integer. */
  nextUint32(): number {
    this.state = (this.state + 0x9e3779b9) >>> 0;
    let z = this.state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    if (!(n > 0)) throw new Error(`Rng.int needs n > 0, got ${n}`);
    return Math.floor(this.next() * n);
  }

  /** Standard normal (Box–Muller). */
  normal(): number {
    let u = this.next();
    while (u <= 1e-12) u = this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('Rng.pick on an empty array');
    return items[this.int(items.length)]!;
  }

  /** Fisher–Yates shuffle, in place; returns the array. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const t = items[i]!;
      items[i] = items[j]!;
      items[j] = t;
    }
    return items;
  }

  /** An independent generator derived from this one (for per-episode streams). */
  fork(): Rng {
    return new Rng(this.nextUint32());
  }
}

/** Mixes several integers into one seed (e.g. run seed, iteration, episode index). */
export function mixSeed(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) h = mixOne(h, p);
  return h >>> 0;
}

/** mixSeed(seed, ...key's UTF-16 code units, ...values) without spreading long lists into arguments. */
export function mixSeedOf(seed: number, key: string, values: ArrayLike<number>): number {
  let h = mixOne(0x811c9dc5, seed);
  for (let i = 0; i < key.length; i++) h = mixOne(h, key.charCodeAt(i));
  for (let i = 0; i < values.length; i++) h = mixOne(h, values[i]!);
  return h >>> 0;
}

/**
 * Generators for a sampler's requests: one that names its episode gets a stream of its own, seeded
 * by a seed drawn once from `shared` (at the first such request), the episode id and the prompt,
 * so an episode's draws do not depend on which requests shared its batch; the others share `shared`.
 * A request that carries its own seed (SampleRequest.seed: a served request whose client chose
 * one) draws from a stream of that seed alone.
 */
export function requestStreams(
  shared: Rng,
): (req: { episodeId?: string; prompt: readonly number[]; seed?: number }) => Rng {
  let seed: number | undefined;
  return (req) => {
    if (req.seed !== undefined) return new Rng(req.seed); // the client chose (a served request)
    if (req.episodeId === undefined) return shared;
    seed ??= shared.nextUint32();
    return new Rng(requestSeed(seed, req)!);
  };
}

/**
 * The per-request seed a remote-engine client sends (SampleRequest.seed) for a request that names
 * its episode: the sampler's seed mixed with the episode id and the prompt, as requestStreams
 * seeds the embedded engine's streams; undefined for a request without an episode.
 */
export function requestSeed(seed: number, req: { episodeId?: string; prompt: readonly number[] }): number | undefined {
  return req.episodeId === undefined ? undefined : mixSeedOf(seed, req.episodeId, req.prompt);
}

function mixOne(h: number, p: number): number {
  h = Math.imul(h ^ (p >>> 0), 0x01000193) >>> 0;
  return Math.imul(h ^ (h >>> 15), 0x2c1b3c6d) >>> 0;
}
