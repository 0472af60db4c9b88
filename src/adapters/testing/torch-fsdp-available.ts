import { spawnSync } from 'node:child_process';

/**
 * For tests of the sharded trainer (`crl_torch --shard fsdp`), which needs torch >= 2.6: Debian
 * 12's torch (what CI installs) cannot import FSDP. CRL_TORCH_FSDP_PYTHON names a python that
 * can, as a whitespace-split command prefix (scripts/torch-trixie.sh prints one that runs Debian
 * trixie's torch). Unset: the tests skip with a loud message (CRL_REQUIRE_TORCH does not change
 * that; CRL_REQUIRE_TORCH_FSDP=1 makes it a failure). Set to a python without FSDP: a failure.
 */
export function torchFsdpPython(suite: string): string[] | null {
  const raw = process.env.CRL_TORCH_FSDP_PYTHON?.trim() ?? '';
  if (raw === '') {
    const reason = 'CRL_TORCH_FSDP_PYTHON is not set';
    if (process.env.CRL_REQUIRE_TORCH_FSDP === '1') throw new Error(`${suite}: CRL_REQUIRE_TORCH_FSDP=1 but ${reason}`);
    process.stderr.write(
      `\n*** SKIPPED ${suite}: ${reason} (a python with torch >= 2.6; Debian 12's torch has no FSDP). ` +
        'Build one with scripts/torch-trixie.sh DIR and set CRL_TORCH_FSDP_PYTHON to the command it prints; ' +
        'set CRL_REQUIRE_TORCH_FSDP=1 to make this a failure. ***\n\n',
    );
    return null;
  }
  const prefix = raw.split(/\s+/);
  const r = spawnSync(prefix[0]!, [...prefix.slice(1), '-c', 'from torch.distributed.fsdp import fully_shard'], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (r.error !== undefined || r.status !== 0) {
    const why = r.error?.message ?? (r.stderr ?? '').trim().split('\n').pop() ?? '';
    throw new Error(`${suite}: CRL_TORCH_FSDP_PYTHON (${raw}) cannot import FSDP: ${why}`);
  }
  return prefix;
}
