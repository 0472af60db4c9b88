import { verbTools } from '../action-tools.ts';
import { DIRECTIONS } from './generate.ts';
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
  tools: verbTools([
    { name: 'look', description: 'Describe the room you are in.', words: ['look'], params: [] },
    {
      name: 'go',
      description: 'Walk through an exit of this room.',
      words: ['go'],
      params: [{ name: 'direction', type: 'enum', values: DIRECTIONS, description: 'the exit to take' }],
    },
    {
      name: 'take',
      description: 'Pick up an item in this room.',
      words: ['take'],
      params: [{ name: 'item', type: 'word', description: 'the item' }],
    },
    {
      name: 'drop',
      description: 'Put down an item you carry.',
      words: ['drop'],
      params: [{ name: 'item', type: 'word', description: 'the item' }],
    },
    { name: 'done', description: 'End the task (it is then checked).', words: ['done'], params: [] },
  ]),
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
