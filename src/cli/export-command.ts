import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { z } from 'zod';
import { EXPORT_FORMATS, exportPolicy, HF_EXPORT_FILES } from '../experiments/export/export-policy.ts';
import { CliError } from './errors.ts';
import { FORCE_HELP, prepareOutputFile, prepareOutputFiles } from './outputs.ts';

const ExportFlagsSchema = z
  .object({
    policy: z.string().min(1),
    format: z.enum(EXPORT_FORMATS),
    out: z.string().min(1),
    precision: z.enum(['f32', 'f16']).default('f32'),
    force: z.boolean().optional(),
    tokenizer: z.string().min(1).optional(),
  })
  .strict();

export function registerExportCommand(program: Command): void {
  program
    .command('export')
    .description('write a policy for another engine: a GGUF file for llama.cpp, or a Hugging Face model directory')
    .requiredOption(
      '--policy <dir>',
      'a checkpoint directory, a run directory (its latest checkpoint), or a Hugging Face model directory',
    )
    .requiredOption('--format <gguf|hf>', 'gguf: one file with weights, tokenizer and chat template; hf: a directory')
    .requiredOption('--out <path>', 'the .gguf file, or the directory for --format hf')
    .option('--precision <f32|f16>', 'GGUF weight precision (f16 keeps the norm weights in f32); hf is always f32')
    .option(
      '--tokenizer <word|qwen3|dir>',
      "the policy's tokenizer, written into the export; checked against the policy's own, which is the default (a checkpoint's crl_tokenizer.json, a Hugging Face directory's tokenizer.json, else word)",
    )
    .option('--force', FORCE_HELP)
    .action(async (raw: Record<string, unknown>) => {
      const r = ExportFlagsSchema.safeParse(raw);
      if (!r.success)
        throw new CliError(r.error.issues.map((i) => `--${String(i.path[0] ?? '')}: ${i.message}`).join('\n'));
      const f = r.data;
      if (!existsSync(f.policy)) throw new CliError(`--policy: no such checkpoint or run directory: ${f.policy}`);
      if (f.format === 'hf' && f.precision !== 'f32')
        throw new CliError('--precision: --format hf writes f32 weights; drop --precision or use --format gguf');
      const force = f.force === true;
      if (f.format === 'gguf') prepareOutputFile({ path: f.out, force });
      else prepareOutputFiles({ dir: f.out, files: HF_EXPORT_FILES, force });
      let result;
      try {
        result = await exportPolicy({
          policy: f.policy,
          format: f.format,
          out: f.out,
          precision: f.precision,
          tokenizer: f.tokenizer,
        });
      } catch (e) {
        if (e instanceof Error && e.name === 'Error' && /no checkpoint yet|no such checkpoint/.test(e.message))
          throw new CliError(`--policy: ${e.message}`);
        throw e;
      }
      for (const w of result.warnings) process.stderr.write(`crl: warning: ${w}\n`);
      process.stderr.write(
        `crl: wrote ${result.out} (${result.format}, ${result.precision}, tokenizer ${result.tokenizer}, ${result.bytes} bytes)\n`,
      );
      process.stdout.write(`${JSON.stringify(result)}\n`);
    });
}
