import { spawnSync } from 'node:child_process';

/**
 * For tests that need a newer torch than Debian 12's (what CI installs): a python named by an
 * environment variable, as a whitespace-split command prefix (scripts/torch-root.sh prints one
 * that runs a Debian trixie or sid root through bubblewrap). Unset: the tests skip with a loud
 * message (CRL_REQUIRE_TORCH does not change that; the suite's own CRL_REQUIRE_* variable makes it
 * a failure). Set to a python that cannot run `probe`: a failure.
 */
interface OutsidePython {
  /** The variable naming the python. */
  variable: string;
  /** The variable that turns the skip into a failure. */
  require: string;
  /** What the python must have, for the messages. */
  needs: string;
  /** How to build one, for the skip message. */
  build: string;
  /** Python code that succeeds only where the python has what is needed. */
  probe: string;
}

function outsidePython(suite: string, spec: OutsidePython): string[] | null {
  const raw = process.env[spec.variable]?.trim() ?? '';
  if (raw === '') {
    const reason = `${spec.variable} is not set`;
    if (process.env[spec.require] === '1') throw new Error(`${suite}: ${spec.require}=1 but ${reason}`);
    process.stderr.write(
      `\n*** SKIPPED ${suite}: ${reason} (${spec.needs}). Build one with ${spec.build} and set ` +
        `${spec.variable} to the command it prints; set ${spec.require}=1 to make this a failure. ***\n\n`,
    );
    return null;
  }
  const prefix = raw.split(/\s+/);
  const r = spawnSync(prefix[0]!, [...prefix.slice(1), '-c', spec.probe], { encoding: 'utf8', timeout: 120_000 });
  if (r.error !== undefined || r.status !== 0) {
    const why = r.error?.message ?? (r.stderr ?? '').trim().split('\n').pop() ?? '';
    throw new Error(`${suite}: ${spec.variable} (${raw}) lacks ${spec.needs}: ${why}`);
  }
  return prefix;
}

/** A python with FSDP (torch >= 2.6; Debian 12's torch has none): CRL_TORCH_FSDP_PYTHON. */
export const torchFsdpPython = (suite: string): string[] | null =>
  outsidePython(suite, {
    variable: 'CRL_TORCH_FSDP_PYTHON',
    require: 'CRL_REQUIRE_TORCH_FSDP',
    needs: 'a python with torch >= 2.6, whose FSDP imports',
    build: 'scripts/torch-root.sh DIR',
    probe: 'from torch.distributed.fsdp import fully_shard',
  });

/** A python with Hugging Face transformers (Debian packages it in sid only): CRL_TORCH_HF_PYTHON. */
export const torchHfPython = (suite: string): string[] | null =>
  outsidePython(suite, {
    variable: 'CRL_TORCH_HF_PYTHON',
    require: 'CRL_REQUIRE_TORCH_HF',
    needs: 'a python with torch and transformers',
    build: 'scripts/torch-root.sh --transformers DIR',
    probe: 'import torch, transformers',
  });

/** A python with transformers and PEFT (neither in Debian 12): CRL_TORCH_PEFT_PYTHON. */
export const torchPeftPython = (suite: string): string[] | null =>
  outsidePython(suite, {
    variable: 'CRL_TORCH_PEFT_PYTHON',
    require: 'CRL_REQUIRE_TORCH_PEFT',
    needs: 'a python with torch, transformers and peft',
    build: "a virtual environment with `pip install torch transformers peft` (pip's index or a local mirror)",
    probe: 'import torch, transformers, peft',
  });
