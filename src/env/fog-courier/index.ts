import type { TaskFamily } from '../family.ts';
import { fogCourierDense } from './dense.ts';
import { makeSummaryWriters, summaryFactsOf } from '../summary-writers.ts';
import { FogCourierEnv } from './env.ts';
import { fogCourierExpert, fogCourierNeeded, fogCourierSlip } from './expert.ts';
import { fogCourierKnobs, fogCourierVariants, type FogCourierKnobs } from './knobs.ts';

export const fogCourier: TaskFamily<FogCourierKnobs> = {
  name: 'fog-courier',
  description: 'explore a tree of rooms one room at a time, take the named item and deliver it to the target room',
  knobs: fogCourierKnobs,
  variants: fogCourierVariants,
  trainSeeds: { start: 0, end: 1_000_000 },
  evalSeeds: { start: 1_000_000, end: 1_010_000 },
  create: (knobs) => new FogCourierEnv(knobs),
  expert: fogCourierExpert,
  summaryWriters: makeSummaryWriters(fogCourierNeeded),
  sft: {
    slip: fogCourierSlip,
    dense: (o) => fogCourierDense(o),
  },
  summaryFacts: summaryFactsOf(fogCourierNeeded),
};

export { FogCourierEnv } from './env.ts';
export { generateFogCourier, verifyFogCourier } from './generate.ts';
export type { FogCourierTask } from './generate.ts';
export { fogCourierKnobs, fogCourierVariants } from './knobs.ts';
export type { FogCourierKnobs } from './knobs.ts';
