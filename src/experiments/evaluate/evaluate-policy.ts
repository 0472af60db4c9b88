import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { evaluate } from '../../eval/evaluate.ts';
import type { EvalResult } from '../../eval/eval-result.ts';
import { formatSummaryWriter, parseSummaryWriter } from '../../eval/summary-writer.ts';
import { variantKnobs } from '../../env/knobs.ts';
import { overFamilySizes, resolveRolloutConfig } from '../../rollout/config.ts';
import { ensureDir, writeFileAtomic } from '../../util/atomic-write.ts';
import { canonicalJson, provenance } from '../../util/provenance.ts';
import { episodeBatchRunner, evalTaskSeeds } from './eval-runner.ts';
import { writeEvalEvents } from './eval-tensorboard.ts';
import { policySource, summaryWriterSource, tokenizerForPolicy } from './policy-source.ts';
import { familyByName } from '../../env/family-by-name.ts';
import { HARBOR_PREFIX, isHarborEnv } from '../../env/harbor/task-set.ts';

/** Everything `crl eval` needs; the pipeline calls this once per (system, env, variant, writer). */
export interface EvalRequest {
  system: string;
  /** 'expert', a checkpoint dir or a run dir. */
  policy: string;
  env: string;
  /** 'default' or a held-out variant name of the family. */
  variant: string;
  /** self | oracle | null | lossy:P | checkpoint:PATH */
  summaryWriter: string;
  rollout: Record<string, unknown>;
  knobs: Record<string, unknown>;
  tasks: number;
  samplesPerTask: number;
  windows: number[];
  trainingWindows: number | null;
  seed: number;
  out: string;
  /** --tokenizer: word | qwen3 | DIR; default: the policy checkpoint's own (word for the expert). */
  tokenizer?: string;
  /**
   * The pipeline directory: recorded paths (the policy, the request) are written relative to it, so
   * results stay valid when the directory moves and name no machine path.
   */
  root?: string;
  /** The config hash of the run the policy comes from (its provenance); recorded in the request. */
  policyConfigHash?: string | null;
  /** False: write no TensorBoard event file (eval-tensorboard.ts); absent: write one. */
  tensorboard?: boolean;
}

/**
 * What an evaluation was made with (EvalResult.request): the request without its output path and
 * without whether it wrote event files (neither changes the result).
 */
export function evalRequestRecord(req: EvalRequest): Record<string, unknown> {
  const { out: _out, root, tensorboard: _tensorboard, ...settings } = req;
  return JSON.parse(canonicalJson({ ...settings, policyConfigHash: req.policyConfigHash ?? null }, root)) as Record<
    string,
    unknown
  >;
}

/** Runs one evaluation and writes its validated JSON file atomically; returns the result. */
export async function evaluatePolicy(req: EvalRequest): Promise<EvalResult> {
  const family = familyByName(req.env);
  // The scripted expert has no tokenizer of its own: it writes in the one the family's text needs.
  const given = req.tokenizer ?? (req.policy === 'expert' ? family.tokenizer : undefined);
  const tokenizer = await tokenizerForPolicy({ policy: req.policy, ...(given ? { given } : {}) });
  const rolloutInput = overFamilySizes(family.rollout, req.rollout);
  const knobs = { ...req.knobs, ...variantKnobs(family, req.variant) };
  const spec = parseSummaryWriter(req.summaryWriter);
  // C is the same in every mode (only K changes): the models are checked against it once.
  const resolved = resolveRolloutConfig({
    input: { ...rolloutInput, maxWindows: 1 },
    tokenizer,
    tools: family.tools ?? null,
  });
  const { contextWindow } = resolved.config;
  // The tools format (docs/agent-format.md): scripted policies then write calls.
  const agent = resolved.layout.agent;
  const actor = await policySource({ policy: req.policy, family, tokenizer, contextWindow, agent });
  const writer = await summaryWriterSource({ spec, family, tokenizer, contextWindow, agent });
  const run = episodeBatchRunner({
    family,
    knobs,
    rolloutInput,
    tokenizer,
    actor: actor.factory,
    summarizer: writer?.factory ?? null,
    seed: req.seed,
  });
  const request = evalRequestRecord(req);
  const evaluated = await evaluate({
    run,
    system: req.system,
    policy: req.root ? relativePath(req.root, actor.source) : actor.source,
    // A task set inside the pipeline is named relative to it (harbor:tasks/...): no machine path.
    env: req.root ? envInside(req.root, req.env) : req.env,
    variant: req.variant,
    summaryWriter: formatSummaryWriter(spec),
    contextWindow,
    taskSeeds: evalTaskSeeds(family, { tasks: req.tasks }),
    samplesPerTask: req.samplesPerTask,
    windowsList: req.windows,
    trainingWindows: req.trainingWindows,
  });
  const result: EvalResult = { ...evaluated, seed: req.seed, request, provenance: provenance(request) };
  ensureDir(dirname(req.out));
  writeFileAtomic(req.out, `${JSON.stringify(result, null, 2)}\n`);
  if (req.tensorboard !== false) writeEvalEvents({ result, policy: req.policy, out: req.out });
  return result;
}

/** `path` relative to `root` with `/` separators when inside it; else unchanged. */
function relativePath(root: string, path: string): string {
  const r = relative(resolve(root), resolve(path));
  return r === '' || r.startsWith('..') || isAbsolute(r) ? path : r.split(sep).join('/');
}

/** `harbor:PATH` with PATH relative to `root` when inside it; any other env unchanged. */
function envInside(root: string, env: string): string {
  return isHarborEnv(env) ? `${HARBOR_PREFIX}${relativePath(root, env.slice(HARBOR_PREFIX.length))}` : env;
}
