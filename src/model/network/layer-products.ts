/**
 * The layers' four products (q/k/v, o, gate/up, down: llama-block.ts) as ranges of a network's
 * flat parameters, and a copy of the parameters without some ranges. What LoRA storage 'base'
 * (model/lora/merged-layers.ts) releases from the network and supplies itself.
 */
import type { LayerMatrix } from './transformer.ts';
import type { WeightViews } from './weights.ts';

export const LAYER_PRODUCTS: readonly LayerMatrix[] = ['qkv', 'o', 'gateUp', 'down'];

/** One layer product: layer l's `product`, floats [offset, offset + size) of the parameters. */
export interface ProductRange {
  layer: number;
  product: LayerMatrix;
  offset: number;
  size: number;
}

/** Every layer product of `views` (views of `buf`), layer by layer in LAYER_PRODUCTS order. */
export function productRanges(views: WeightViews, buf: Float32Array): ProductRange[] {
  return views.layers.flatMap((lw, layer) =>
    LAYER_PRODUCTS.map((product) => ({
      layer,
      product,
      offset: (lw[product].byteOffset - buf.byteOffset) / 4,
      size: lw[product].length,
    })),
  );
}

/** The range holding parameter `offset`, if any. */
export function productAt(ranges: readonly ProductRange[], offset: number): ProductRange | undefined {
  return ranges.find((r) => r.offset <= offset && offset < r.offset + r.size);
}

/**
 * A new buffer [src.length] holding src except `ranges`, which are never written: their pages
 * are never mapped, so they take no memory until someone writes them.
 */
export function copyExcept(src: Float32Array, ranges: readonly { offset: number; size: number }[]): Float32Array {
  const next = new Float32Array(src.length);
  let at = 0;
  for (const r of [...ranges].sort((a, b) => a.offset - b.offset)) {
    if (r.offset > at) next.set(src.subarray(at, r.offset), at);
    at = Math.max(at, r.offset + r.size);
  }
  if (at < next.length) next.set(src.subarray(at), at);
  return next;
}
