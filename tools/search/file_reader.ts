/**
 * Many files read in threads beside the calling one, for a reader of a whole
 * workspace (undo's first snapshot: on 100,000 files about 1.7 s alone, 1.1 s
 * with one thread beside it on two cores, where the calling thread hashes and
 * keeps what the other reads). A thread is a web worker made from text, so it
 * starts in about 25 ms and lives as long as the one call.
 *
 * @module
 */

/** One file read by {@link readFiles}: its bytes, or why not. */
export type FileRead =
  | { bytes: Uint8Array }
  | { bytes?: undefined; failed: "unreadable" | "too big" };

/**
 * The readers' code: a module of its own, made from text so it needs no file
 * beside crab's bundle or binary, and no Node layer (12 MB a thread less).
 * Each batch is read into one buffer, handed over, not copied, and given back
 * for a later batch.
 */
const READER = `
self.onmessage = (e) => {
  const { id, paths, sizes, max, spare } = e.data;
  const n = paths.length;
  let cap = 1024;
  for (const s of sizes) cap += Math.min(s, max) + 1;
  // The buffer of a batch given back, when it is big enough: no new memory per batch.
  let buf = spare && spare.length >= cap ? spare : new Uint8Array(cap);
  const starts = new Int32Array(n), lens = new Int32Array(n);
  let at = 0;
  for (let i = 0; i < n; i++) {
    starts[i] = at;
    let len = 0, file;
    try {
      file = Deno.openSync(paths[i]);
      for (;;) {
        if (at + len === buf.length) {
          if (len >= max) break;
          const grown = new Uint8Array(buf.length * 2);
          grown.set(buf.subarray(0, at + len));
          buf = grown;
        }
        const room = buf.subarray(at + len);
        const got = file.readSync(room);
        if (!got) break;
        len += got;
        // A regular file reads short only at its end.
        if (got < room.length) break;
      }
    } catch {
      lens[i] = -1;
      continue;
    } finally {
      file?.close();
    }
    if (len >= max) {
      lens[i] = -2;
      continue;
    }
    lens[i] = len;
    at += len;
  }
  self.postMessage({ id, buf, starts, lens }, [buf.buffer]);
};
`;

/** Files a batch holds at most, and bytes about. */
const BATCH_FILES = 256, BATCH_BYTES = 1 * 1024 * 1024;
/** Batches a reader holds at once. */
const IN_FLIGHT = 2;

/**
 * Reads the files `paths` (about `sizes` bytes each) in `workers` threads
 * beside this one, calling `got` with each, in order, on this thread as their
 * batch comes back (the bytes are valid during the call only: their buffer is
 * used again); a file of `max` bytes or more is not read (`too big`). Rejects
 * when a reader cannot start or fails: the files not yet given to `got` are
 * then the caller's to read.
 */
export async function readFiles(
  paths: readonly string[],
  sizes: readonly number[],
  max: number,
  got: (i: number, read: FileRead) => void,
  workers = 1,
): Promise<void> {
  const batches: [number, number][] = [];
  for (let i = 0; i < paths.length;) {
    let j = i, bytes = 0;
    while (j < paths.length && j - i < BATCH_FILES && bytes < BATCH_BYTES) bytes += sizes[j++];
    batches.push([i, j]);
    i = j;
  }
  const url = URL.createObjectURL(new Blob([READER], { type: "text/javascript" }));
  const pool: Worker[] = [];
  try {
    // Batches come back in any order; `got` hears them in order.
    const done = new Map<
      number,
      { buf: Uint8Array<ArrayBuffer>; starts: Int32Array; lens: Int32Array }
    >();
    // Buffers taken, given back to a reader for its next batch.
    const spares: Uint8Array<ArrayBuffer>[] = [];
    let next = 0, given = 0;
    await new Promise<void>((resolve, reject) => {
      const deliver = () => {
        for (let r = done.get(given); r; r = done.get(given)) {
          done.delete(given);
          const [from] = batches[given];
          for (let k = 0; k < r.lens.length; k++) {
            const len = r.lens[k];
            got(
              from + k,
              len >= 0
                ? { bytes: r.buf.subarray(r.starts[k], r.starts[k] + len) }
                : { failed: len === -1 ? "unreadable" : "too big" },
            );
          }
          given++;
          spares.push(r.buf);
        }
        if (given === batches.length) resolve();
      };
      const send = (w: Worker) => {
        if (next >= batches.length) return;
        const id = next++;
        const [from, to] = batches[id];
        const spare = spares.pop();
        w.postMessage(
          { id, paths: paths.slice(from, to), sizes: sizes.slice(from, to), max, spare },
          spare ? [spare.buffer] : [],
        );
      };
      for (let k = 0; k < workers; k++) {
        const w = new Worker(url, { type: "module" });
        pool.push(w);
        w.onmessage = (e) => {
          done.set(e.data.id, e.data);
          try {
            deliver();
            send(w);
          } catch (err) {
            reject(err);
          }
        };
        w.onerror = (e) => {
          e.preventDefault();
          reject(new Error(`a reader failed: ${e.message}`));
        };
        // A few batches each: the next ones are read while this thread takes one.
        for (let b = 0; b < IN_FLIGHT; b++) send(w);
      }
      if (batches.length === 0) resolve();
    });
  } finally {
    for (const w of pool) w.terminate();
    URL.revokeObjectURL(url);
  }
}
