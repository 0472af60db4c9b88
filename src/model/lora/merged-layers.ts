/**
 * A LoRA policy's layer products when the network does not hold them in f32 (LoraAdapter with
 * storage 'base', docs/lora.md): the base's four products of every layer (q/k/v, o, gate/up,
 * down) stay frozen in this object (bf16 when every value is one, frozen-base.ts), and layer l's
 * merged products W0 + s B A are materialized on demand into one layer's f32 buffers.
 *
 * Why materialize rather than run x W0^T + s (x A^T) B^T beside the base: the merge gives the
 * same f32 sums as the loraMerge the merged storage runs, so every weight the trunk and the
 * sampler's copy read is bit for bit the merged storage's, and the trunk, its backward and the
 * f32 GEMM stay as they are (the side path's backward would need W0 in the other orientation, a
 * second bf16 copy or a new kernel). The cost is a widen and an r-deep product per weight each
 * time a layer is materialized (twice per forward + backward, as each layer is read once going
 * up and once coming down): 45 to 50 ms per Qwen3-0.6B layer, about 2.6 s of a 30 s step
 * (docs/engine-scale.md "LoRA adapters"). The memory: one layer's products in f32 (63 MB at
 * Qwen3-0.6B) in place of every layer's (1.76 GB).
 *
 * Legend: L = layers, C = dModel, Q3 = (H + 2 Hkv) D, F = mlpHidden.
 */
import { LAYER_PRODUCTS, productRanges } from '../network/layer-products.ts';
import type { LlamaNetwork } from '../network/network.ts';
import type { LayerMatrix } from '../network/transformer.ts';
import type { LayerViews } from '../network/weights.ts';
import { FrozenBase } from './frozen-base.ts';

/** Where one layer product lives: in the network's parameters, and in the frozen base. */
export interface ProductPlace {
  offset: number; // into net.params
  size: number;
  baseOffset: number; // into base
}

/** Writes s B A of every adapted matrix of layer l's `product` onto `out` (holding W0 [O, I]). */
export type MergeProduct = (o: { layer: number; product: LayerMatrix; out: Float32Array }) => void;

export class MergedLayers {
  /** Every layer's four products, frozen: [sum over layers of Q3 C + C H D + 2F C + C F]. */
  readonly base: FrozenBase;
  /** places[l][p]: layer l's product p (LAYER_PRODUCTS order). */
  readonly places: readonly (readonly ProductPlace[])[];
  private readonly net: LlamaNetwork;
  private readonly bufs: Record<LayerMatrix, Float32Array>; // one layer's products, merged
  private cachedLayer = -1;
  private cachedStamp = -1;

  /** Takes the network's current layer products as the frozen base (it does not release them). */
  constructor(net: LlamaNetwork) {
    this.net = net;
    let baseAt = 0;
    const ranges = productRanges(net.w, net.params);
    this.places = net.w.layers.map((_, l) =>
      ranges
        .filter((r) => r.layer === l)
        .map(({ offset, size }) => {
          const place = { offset, size, baseOffset: baseAt };
          baseAt += size;
          return place;
        }),
    );
    this.base = new FrozenBase(
      this.places.flatMap((ps) => ps.map((pl) => net.params.subarray(pl.offset, pl.offset + pl.size))),
    );
    const first = this.places[0] ?? [];
    this.bufs = {
      qkv: new Float32Array(first[0]?.size ?? 0),
      o: new Float32Array(first[1]?.size ?? 0),
      gateUp: new Float32Array(first[2]?.size ?? 0),
      down: new Float32Array(first[3]?.size ?? 0),
    };
  }

  /** The f32 bytes of one layer's products this object holds for the materialized layer. */
  get scratchBytes(): number {
    return 4 * LAYER_PRODUCTS.reduce((a, p) => a + this.bufs[p].length, 0);
  }

  /** Every layer product's range in the network's parameters (what LlamaNetwork.releaseRanges drops). */
  ranges(): { offset: number; size: number }[] {
    return this.places.flatMap((ps) => ps.map(({ offset, size }) => ({ offset, size })));
  }

  /**
   * Layer l's weights: its norms from the network, its products W0 + s B A from the base and
   * `merge`. Kept until another layer or weight version (`stamp`) is asked for, so a backward that
   * reads the layer right after its recomputed forward materializes it once.
   */
  layer(l: number, stamp: number, merge: MergeProduct): LayerViews {
    if (l !== this.cachedLayer || stamp !== this.cachedStamp) {
      for (let p = 0; p < LAYER_PRODUCTS.length; p++) {
        const product = LAYER_PRODUCTS[p]!;
        const out = this.bufs[product];
        this.baseInto(l, p, out);
        merge({ layer: l, product, out });
      }
      this.cachedLayer = l;
      this.cachedStamp = stamp;
    }
    return { ...this.net.w.layers[l]!, ...this.bufs };
  }

  /** Layer l's product p of the base, as f32, into `out` [size]. */
  baseInto(l: number, p: number, out: Float32Array): Float32Array {
    const { baseOffset, size } = this.places[l]![p]!;
    const v = this.base.read(baseOffset, size, out);
    if (v.buffer !== out.buffer) out.set(v); // an f32 base reads as a view of itself
    return out.subarray(0, size);
  }

  /** Forget the materialized layer (after the base's values are read back into another buffer). */
  invalidate(): void {
    this.cachedLayer = -1;
  }
}
