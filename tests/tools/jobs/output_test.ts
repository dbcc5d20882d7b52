import assert from "node:assert/strict";
import { join } from "node:path";
import { JobOutput, markerLine } from "../../../tools/jobs/output.ts";

const decode = (b: Uint8Array) => new TextDecoder().decode(b);
const lines = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => `line ${from + i}\n`).join("");

function withDir(fn: (dir: string) => void): void {
  const dir = Deno.makeTempDirSync({ prefix: "crab-job-output-" });
  try {
    fn(dir);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

Deno.test("JobOutput keeps short output as it came, and read() continues where it stopped", () => {
  withDir((dir) => {
    const out = new JobOutput(join(dir, "out.txt"), { headBytes: 100, tailBytes: 100 });
    out.push(new TextEncoder().encode("one\ntwo\n"));
    const first = out.read(0);
    assert.equal(decode(first.before) + decode(first.after), "one\ntwo\n");
    assert.equal(first.next, 8);
    out.push(new TextEncoder().encode("three\n"));
    const second = out.read(first.next);
    assert.deepEqual([decode(second.before), second.dropped, second.next], ["three\n", 0, 14]);
    out.close();
    assert.equal(Deno.readTextFileSync(out.path), "one\ntwo\nthree\n");
    // Readable once closed, through a handle of its own.
    assert.equal(decode(out.read(4).before), "two\nthree\n");
  });
});

Deno.test("JobOutput keeps the head, a marker with the dropped count, and the latest output", () => {
  withDir((dir) => {
    const path = join(dir, "out.txt");
    const out = new JobOutput(path, { headBytes: 1000, tailBytes: 2000 });
    const all = lines(0, 5000);
    const bytes = new TextEncoder().encode(all);
    // In uneven chunks, as a pipe delivers them.
    for (let i = 0; i < bytes.length; i += 333) out.push(bytes.subarray(i, i + 333));
    out.close();
    const file = Deno.readTextFileSync(path);
    assert.equal(out.totalBytes, bytes.length);
    assert.ok(Deno.statSync(path).size <= 1000 + 160 + 2000, `${Deno.statSync(path).size}`);
    assert.equal(file.slice(0, 1000), all.slice(0, 1000));
    const marker = markerLine(out.droppedBytes);
    assert.equal(new TextEncoder().encode(marker).byteLength, 160);
    assert.equal(file.slice(1000, 1000 + marker.length), marker);
    const tail = file.slice(1000 + marker.length);
    // The kept end is the output's end, from the start of a line, at least half the room.
    assert.ok(all.endsWith(tail));
    assert.ok(tail.length >= 1000, `${tail.length}`);
    assert.match(tail, /^line \d+\n/);
    assert.equal(out.droppedBytes, bytes.length - 1000 - tail.length);
    assert.match(
      marker,
      new RegExp(`\\[… ${out.droppedBytes} bytes of this job's output were dropped here`),
    );
  });
});

Deno.test("JobOutput.read() says how much of the unread output was dropped", () => {
  withDir((dir) => {
    const out = new JobOutput(join(dir, "out.txt"), { headBytes: 100, tailBytes: 200 });
    const enc = new TextEncoder();
    out.push(enc.encode("h".repeat(50)));
    const a = out.read(0);
    assert.equal(a.next, 50);
    out.push(enc.encode("x".repeat(1000) + "end\n"));
    const b = out.read(a.next);
    assert.equal(decode(b.before), "x".repeat(50));
    assert.ok(decode(b.after).endsWith("end\n"));
    assert.equal(50 + 50 + b.dropped + b.after.byteLength, 1054);
    assert.equal(b.next, 1054);
    // At most `max` bytes, the first ones: the reader goes on from there.
    const c = out.read(0, 70);
    assert.deepEqual([c.before.byteLength, c.after.byteLength, c.next], [70, 0, 70]);
  });
});

Deno.test("JobOutput takes a chunk larger than the kept end", () => {
  withDir((dir) => {
    const out = new JobOutput(join(dir, "out.txt"), { headBytes: 10, tailBytes: 100 });
    out.push(new TextEncoder().encode("a".repeat(10) + "b".repeat(500) + "c".repeat(40)));
    const r = out.read(0);
    assert.equal(decode(r.before), "a".repeat(10));
    assert.equal(decode(r.after), "b".repeat(10) + "c".repeat(40));
    assert.equal(r.dropped, 490);
    assert.equal(out.droppedBytes, 490);
  });
});
