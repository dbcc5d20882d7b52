/**
 * Downscaling by area averaging: each pixel sent is the mean of the source
 * pixels it covers, weighted by how much of each it covers. It is the right
 * filter for shrinking (no aliasing, text in a screenshot stays legible), and
 * it runs one source row at a time, so memory is the output and two rows.
 *
 * @module
 */

/** Which source pixels one output pixel covers along an axis, and how much of each. */
interface Span {
  first: number;
  weights: Float32Array;
}

function spans(from: number, to: number): Span[] {
  const scale = from / to;
  const out: Span[] = [];
  for (let t = 0; t < to; t++) {
    const x0 = t * scale;
    const x1 = x0 + scale;
    const first = Math.floor(x0);
    const last = Math.min(from, Math.ceil(x1));
    const weights = new Float32Array(last - first);
    for (let x = first; x < last; x++) {
      weights[x - first] = (Math.min(x + 1, x1) - Math.max(x, x0)) / scale;
    }
    out.push({ first, weights });
  }
  return out;
}

/**
 * `src` (RGBA, `width`×`height`) scaled down to `toWidth`×`toHeight`, both no
 * larger than the source.
 *
 * @example
 * ```ts
 * const small = downscale(rgba, 3000, 2000, 1341, 894);
 * small.length; // 1341 * 894 * 4
 * ```
 */
export function downscale(
  src: Uint8Array | Uint8ClampedArray,
  width: number,
  height: number,
  toWidth: number,
  toHeight: number,
): Uint8ClampedArray<ArrayBuffer> {
  if (toWidth > width || toHeight > height) {
    throw new RangeError(`Cannot downscale ${width}×${height} to ${toWidth}×${toHeight}`);
  }
  const out = new Uint8ClampedArray(toWidth * toHeight * 4);
  const across = spans(width, toWidth);
  const down = spans(height, toHeight);
  const row = new Float32Array(toWidth * 4);
  const acc = new Float32Array(toWidth * 4);
  let y = 0;
  for (let ty = 0; ty < toHeight; ty++) {
    const { first, weights } = down[ty];
    acc.fill(0);
    for (let k = 0; k < weights.length; k++) {
      y = first + k;
      shrinkRow(src, y * width * 4, across, row);
      const w = weights[k];
      for (let i = 0; i < row.length; i++) acc[i] += row[i] * w;
    }
    out.set(acc, ty * toWidth * 4);
  }
  return out;
}

/** One source row, starting at `offset`, averaged across into `row`. */
function shrinkRow(src: ArrayLike<number>, offset: number, across: Span[], row: Float32Array) {
  for (let t = 0; t < across.length; t++) {
    const { first, weights } = across[t];
    let r = 0, g = 0, b = 0, a = 0;
    let p = offset + first * 4;
    for (let k = 0; k < weights.length; k++, p += 4) {
      const w = weights[k];
      r += src[p] * w;
      g += src[p + 1] * w;
      b += src[p + 2] * w;
      a += src[p + 3] * w;
    }
    const o = t * 4;
    row[o] = r;
    row[o + 1] = g;
    row[o + 2] = b;
    row[o + 3] = a;
  }
}
