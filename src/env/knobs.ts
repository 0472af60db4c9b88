import type { z } from 'zod';
import type { TaskFamily } from './family.ts';

/** Knob values a user got wrong (CLI flag, config file): the message lists every problem. */
export class KnobsError extends Error {
  constructor(
    readonly family: string,
    readonly problems: readonly string[],
  ) {
    super(`invalid knobs for task family ${family}:\n  - ${problems.join('\n  - ')}`);
    this.name = 'KnobsError';
  }
}

/** Parses knobs at the boundary (house style: zod, unknown keys rejected) with a readable error. */
export function parseKnobs<T>(options: { family: string; schema: z.ZodType<T>; input: unknown }): T {
  const r = options.schema.safeParse(options.input ?? {});
  if (r.success) return r.data;
  throw new KnobsError(
    options.family,
    r.error.issues.map((i) => `${i.path.join('.') || '(knobs)'}: ${i.message}`),
  );
}

/** The knobs of a named held-out variant ('default' = no overrides); unknown names list the valid ones. */
export function variantKnobs(family: TaskFamily, variant: string): Record<string, unknown> {
  if (variant === 'default') return {};
  const v = family.variants[variant];
  if (!v) {
    const valid = ['default', ...Object.keys(family.variants).sort()].join(', ');
    throw new KnobsError(family.name, [`unknown variant ${JSON.stringify(variant)}; valid variants: ${valid}`]);
  }
  return { ...v };
}
