/**
 * The contracts every layer speaks (docs/layout.md): environments, tokenizers, samplers, chat
 * turns, text policies and trainable models. This folder imports nothing else of the project.
 */
export type { EnvCallOptions, Environment, EnvReset, EnvStep } from './environment.ts';
export type { Tokenizer } from './tokenizer.ts';
export type { SampleRequest, SampleResult, SamplingParams, TokenSampler } from './sampler.ts';
export { SamplerFault } from './sampler.ts';
export type { ChatMessage } from './chat.ts';
export type { RandomSource, TextPolicy } from './text-policy.ts';
export type { PolicyForward, TrainableCritic, TrainablePolicy } from './trainable.ts';
export { EnvSpecSchema, type EnvSpec, type EnvSpecInput } from './env-spec.ts';
export {
  ToolArgumentsError,
  type ActionTools,
  type Reasoner,
  type ToolCall,
  type ToolParameters,
  type ToolSpec,
} from './tools.ts';
export { FAULT_KINDS, faultKindOf, type FaultKind } from './fault.ts';
