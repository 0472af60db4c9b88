import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { modelConfig, type ModelConfig } from '../../model/network/config.ts';
import { CriticModel } from '../../model/network/critic.ts';
import { PolicyModel } from '../../model/network/policy.ts';
import { randomSequences, scrambleWeights } from '../../model/network/test-helpers.ts';
import { DEFAULT_OPTIMIZER, type OptimizerConfig } from '../../optim/config.ts';
import { Rng } from '../../util/random.ts';
import { maxAbsDiff } from '../testing/max-diff.ts';
import { torchHfPython } from '../testing/torch-outside-python.ts';
import { expectWithinBounds, trainSideBySide, type ParityBounds } from '../testing/torch-parity.ts';
import { TorchTrainer } from './torch-trainer.ts';

/**
 * The trainer on Hugging Face transformers' own model classes (`crl_torch --model-impl
 * transformers`: Qwen3ForCausalLM / LlamaForCausalLM's decoder and head, the same decoder under
 * crl's value head) against the embedded engine: the same outputs, gradient norms and weights after
 * two AdamW steps; and the policy it saves is what transformers' from_pretrained loads, giving the
 * embedded engine's log-probs. Needs a python with transformers (CRL_TORCH_HF_PYTHON;
 * `scripts/torch-root.sh --transformers DIR` builds one from Debian sid), skips loudly without.
 */
const BOUNDS: ParityBounds = { outputs: 1e-5, gradNormRel: 1e-5, gradNormRelAfterStep: 1e-5, weights: 1e-4 };
const OPTIM: OptimizerConfig = { ...DEFAULT_OPTIMIZER, lr: 1e-2, warmupSteps: 1, totalSteps: 4, gradClip: 0.5 };

const SHAPES: { name: string; cfg: ModelConfig; cls: string }[] = [
  { name: 'Llama (tiny, untied head)', cfg: modelConfig('tiny'), cls: 'LlamaForCausalLM' },
  {
    name: 'Qwen3: q/k norm, grouped-query attention, tied embeddings',
    cfg: modelConfig('tiny', { qkNorm: true, nKvHeads: 1, tiedEmbeddings: true }),
    cls: 'Qwen3ForCausalLM',
  },
];

const python = torchHfPython('torch trainer on transformers model classes');
const run = python ? describe : describe.skip;

run('TorchTrainer on transformers model classes', () => {
  const command = [...(python ?? []), '-m', 'crl_torch', '--model-impl', 'transformers', '--threads', '1'];
  const started: TorchTrainer[] = [];
  afterAll(async () => {
    for (const t of started) await t.close();
  });
  const start = () => {
    const t = TorchTrainer.start({ command, timeoutMs: 300_000 });
    started.push(t);
    return t;
  };

  for (const shape of SHAPES) {
    it(`matches the embedded engine: ${shape.name}`, () => {
      const policy = new PolicyModel({ config: shape.cfg, optim: OPTIM, rng: new Rng(1) });
      scrambleWeights(policy.net, 2);
      const critic = CriticModel.fromPolicy({ policy, optim: OPTIM });
      scrambleWeights(critic.net, 3);
      const before = policy.net.params.slice();
      const trainer = start();
      expect(trainer.info.model).toMatch(/^transformers \d/);
      trainer.init({ policy, critic });
      const mirror = {
        policy: new PolicyModel({ config: shape.cfg, optim: OPTIM, params: new Float32Array(before.length) }),
        critic: new CriticModel({
          config: shape.cfg,
          optim: OPTIM,
          params: new Float32Array(critic.net.params.length),
        }),
      };
      const rng = new Rng(4);
      const seqs = randomSequences({ rng, lengths: [7, 12, 1, 9], cfg: shape.cfg });
      const report = trainSideBySide({ trainer, policy, critic, mirror, batches: [seqs, seqs], rng });
      process.stderr.write(`torch transformers parity (${shape.name}): ${JSON.stringify(report)}\n`);
      expectWithinBounds(report, BOUNDS);
      expect(maxAbsDiff(mirror.policy.net.params, before)).toBeGreaterThan(1e-3);
    });

    it(`saves a ${shape.cls} directory that transformers' from_pretrained loads with the engine's log-probs`, () => {
      const policy = new PolicyModel({ config: shape.cfg, optim: OPTIM, rng: new Rng(5) });
      scrambleWeights(policy.net, 6);
      const trainer = start();
      trainer.init({ policy, critic: null });
      const seq = Int32Array.from([2, 4, 6, 3, 9, 1]);
      trainer.policy.forward([seq], { train: true });
      trainer.policy.backward({ logprobs: [Float32Array.from(seq, (_, t) => (t === 0 ? 0 : 1))] });
      trainer.policy.step();
      trainer.pullInto('policy', policy.net, { optimizer: false });
      const dir = mkdtempSync(join(tmpdir(), 'crl-torch-hf-'));
      try {
        trainer.saveHf(dir);
        const script = [
          'import json, sys, torch, transformers',
          'm = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32)',
          'ids = torch.tensor([json.loads(sys.argv[2])])',
          'lp = torch.log_softmax(m(input_ids=ids).logits[0, :-1].double(), -1)',
          'print(json.dumps({"cls": type(m).__name__, "lp": lp.gather(-1, ids[0, 1:, None])[:, 0].tolist()}))',
        ].join('\n');
        const r = spawnSync(python![0]!, [...python!.slice(1), '-c', script, dir, JSON.stringify(Array.from(seq))], {
          encoding: 'utf8',
          timeout: 300_000,
        });
        expect(r.status, r.stderr).toBe(0);
        const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as { cls: string; lp: number[] };
        expect(out.cls).toBe(shape.cls);
        const ours = policy.forward([seq]).logprobs[0]!.subarray(1);
        expect(maxAbsDiff(ours, Float32Array.from(out.lp))).toBeLessThan(BOUNDS.outputs);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
