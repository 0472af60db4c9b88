import { afterAll } from 'vitest';
import { TorchTrainer } from '../torch-trainer.ts';

/**
 * For a describe block: starts PyTorch trainers and closes every one it started after the block's
 * tests, so a failed assertion leaves no trainer process behind.
 */
export function trainerStarter(): (options?: Parameters<typeof TorchTrainer.start>[0]) => TorchTrainer {
  const started: TorchTrainer[] = [];
  afterAll(async () => {
    for (const t of started) await t.close();
  });
  return (options = {}) => {
    const t = TorchTrainer.start(options);
    started.push(t);
    return t;
  };
}
