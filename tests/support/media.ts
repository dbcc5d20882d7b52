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

/**
 * A PDF whose page N shows the line `texts[N-1]` in Helvetica: the smallest
 * file the PDF spec allows (catalog, page tree, pages, one font, content
 * streams, a cross-reference table with exact offsets).
 */
export function makePdf(texts: string[]): Uint8Array {
  const objects: string[] = [];
  const add = (body: string) => objects.push(body) + 1; // its number: 1 is the catalog
  const font = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
  const kids: number[] = [];
  const pagesNumber = 2 + texts.length * 2 + 1;
  for (const text of texts) {
    const escaped = text.replace(/[\\()]/g, (c) => `\\${c}`);
    const stream = `BT /F1 24 Tf 72 720 Td (${escaped}) Tj ET`;
    const content = add(`<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`);
    kids.push(add(
      `<< /Type /Page /Parent ${pagesNumber} 0 R /MediaBox [0 0 612 792] ` +
        `/Resources << /Font << /F1 ${font} 0 R >> >> /Contents ${content} 0 R >>`,
    ));
  }
  const pages = add(
    `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(" ")}] /Count ${kids.length} >>`,
  );
  if (pages !== pagesNumber) throw new Error("page tree numbered wrong");
  const all = [`<< /Type /Catalog /Pages ${pages} 0 R >>`, ...objects];
  let out = "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n";
  const offsets: number[] = [];
  all.forEach((body, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${all.length + 1}\n0000000000 65535 f \n`;
  for (const o of offsets) out += `${String(o).padStart(10, "0")} 00000 n \n`;
  out += `trailer\n<< /Size ${all.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Uint8Array.from(out, (c) => c.charCodeAt(0));
}
