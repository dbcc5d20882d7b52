/**
 * Images and PDFs made by the tests themselves: a PNG writer (zlib through
 * `CompressionStream`), a PNG that only declares a size, and a minimal PDF
 * writer whose pages each hold one line of text.
 *
 * @module
 */

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const v = new DataView(out.buffer);
  v.setUint32(0, data.length);
  out.set(new TextEncoder().encode(type), 4);
  out.set(data, 8);
  v.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

function ihdr(width: number, height: number): Uint8Array {
  const d = new Uint8Array(13);
  const v = new DataView(d.buffer);
  v.setUint32(0, width);
  v.setUint32(4, height);
  d[8] = 8; // bit depth
  d[9] = 2; // RGB
  return chunk("IHDR", d);
}

const SIGNATURE = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

async function zlib(data: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([data as BlobPart]).stream().pipeThrough(
    new CompressionStream("deflate"),
  );
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/**
 * An RGB PNG of `width`×`height` whose pixel at (x, y) is `color(x, y)`
 * (default: a gradient with a grid, so a shrunk copy is not one flat colour).
 */
export async function makePng(
  width: number,
  height: number,
  color: (x: number, y: number) => [number, number, number] = (x, y) =>
    x % 50 === 0 || y % 50 === 0 ? [0, 0, 0] : [x % 256, y % 256, 128],
): Promise<Uint8Array> {
  const raw = new Uint8Array(height * (1 + width * 3));
  let i = 0;
  for (let y = 0; y < height; y++) {
    raw[i++] = 0; // filter: none
    for (let x = 0; x < width; x++) {
      const [r, g, b] = color(x, y);
      raw[i++] = r;
      raw[i++] = g;
      raw[i++] = b;
    }
  }
  return concat([
    SIGNATURE,
    ihdr(width, height),
    chunk("IDAT", await zlib(raw)),
    chunk("IEND", new Uint8Array()),
  ]);
}

/** A few bytes that declare a `width`×`height` PNG (a decompression bomb's header). */
export async function pngClaiming(width: number, height: number): Promise<Uint8Array> {
  const row = new Uint8Array(1 + width * 3);
  return concat([
    SIGNATURE,
    ihdr(width, height),
    chunk("IDAT", await zlib(row)),
    chunk("IEND", new Uint8Array()),
  ]);
}

/** Width and height a PNG's or JPEG's header declares, read by the test itself. */
export function declaredSize(bytes: Uint8Array): { width: number; height: number } {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes[0] === 0x89) return { width: v.getUint32(16), height: v.getUint32(20) };
  for (let i = 2; i < bytes.length;) {
    const m = bytes[i + 1];
    if (m >= 0xc0 && m <= 0xc3) return { height: v.getUint16(i + 5), width: v.getUint16(i + 7) };
    i += 2 + v.getUint16(i + 2);
  }
  throw new Error("no size found");
}

/** base64 to bytes. */
export function fromBase64(s: string): Uint8Array {
  return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
}
