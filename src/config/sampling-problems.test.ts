import { describe, expect, it } from 'vitest';
import { ConfigError } from './config-error.ts';
import { flagsToConfig } from './config-flags.ts';
import { loadTrainConfig } from './load-config.ts';

function problems(flags: Record<string, string>): string[] {
  try {
    loadTrainConfig({ overrides: flagsToConfig(flags) });
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return [...(e as ConfigError).problems];
  }
  return [];
}

const engine = { engineUrl: 'http://127.0.0.1:30000', offPolicy: 'tis' };

describe('sampling settings training refuses', () => {
  it('takes --temperature and --top-p into the rollout config', () => {
    const c = loadTrainConfig({ overrides: flagsToConfig({ temperature: '0.7', topP: '0.9' }) });
    expect(c.rollout).toMatchObject({ temperature: 0.7, topP: 0.9 });
  });

  it('refuses temperature 0, naming the flag', () => {
    expect(problems({ temperature: '0' })).toEqual([expect.stringMatching(/^rollout\.temperature: .*--temperature/)]);
  });

  it('refuses an off-policy correction against engine log-probs of another distribution', () => {
    // SGLang's default log-probs have the temperature but not top-p.
    expect(problems({ ...engine, temperature: '0.7' })).toEqual([]);
    expect(problems({ ...engine, topP: '0.9' })).toEqual([
      expect.stringMatching(/^engine\.logprobs: --off-policy tis .*--engine-logprobs temperature.*top-p/),
    ]);
    expect(problems({ ...engine, engineLogprobs: 'raw', temperature: '0.7' })[0]).toMatch(/--engine-logprobs raw/);
    expect(problems({ ...engine, engineLogprobs: 'raw' })).toEqual([]); // temperature 1, top-p 1: all agree
    expect(problems({ ...engine, engineLogprobs: 'sampled', temperature: '0.7', topP: '0.9' })).toEqual([]);
    // Without a correction the engine's log-probs only feed the mismatch report.
    expect(problems({ engineUrl: engine.engineUrl, topP: '0.9' })).toEqual([]);
  });

  it('refuses the torch trainer away from temperature 1, top-p 1', () => {
    expect(problems({ trainer: 'torch', temperature: '0.7' })[0]).toMatch(/torch trainer .*--temperature 1 --top-p 1/);
  });
});
