/**
 * CRL_NATIVE=0 must force the TypeScript kernels and print exactly one warning saying why.
 * Runs a child process because the loader decides once, at import.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

const script = `
import { gemm, gemmBackend } from './src/tensor/gemm.ts';
import { nativeStatus } from './src/tensor/native.ts';
const c = new Float32Array(4);
gemm({ a: new Float32Array([1, 2, 3, 4]), b: new Float32Array([5, 6, 7, 8]), c, m: 2, n: 2, k: 2 });
gemm({ a: new Float32Array([1]), b: new Float32Array([1]), c: new Float32Array(1), m: 1, n: 1, k: 1 });
console.log(JSON.stringify({ backend: gemmBackend(), status: nativeStatus(), c: Array.from(c) }));
`;

describe('fallback path', () => {
  it('CRL_NATIVE=0 uses the TypeScript twin and warns once', () => {
    const res = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, CRL_NATIVE: '0' },
    });
    expect(res.status, res.stderr).toBe(0);
    const out = JSON.parse(res.stdout.trim().split('\n').at(-1)!);
    expect(out.backend).toBe('typescript');
    expect(out.status).toEqual({ available: false, reason: 'disabled by CRL_NATIVE=0' });
    expect(out.c).toEqual([19, 22, 43, 50]);
    const warnings = res.stderr.split('\n').filter((l) => l.includes('native kernels unavailable'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('disabled by CRL_NATIVE=0');
    expect(warnings[0]).toContain('TypeScript kernels');
  });
});
