import assert from "node:assert/strict";
import { KeyParser } from "../../../agent/repl/keys.ts";
import { LineBuffer, Renderer, textWidth } from "../../../agent/repl/line_editor.ts";

function typeInto(buf: LineBuffer, input: string, parser = new KeyParser()) {
  return parser.feed(input).map((k) => buf.apply(k));
}

Deno.test("KeyParser decodes text, controls, arrows and a bracketed paste", () => {
  const p = new KeyParser();
  assert.deepEqual(p.feed("ab\x1b[D\x7f\r"), [
    { name: "text", text: "ab" },
    { name: "left" },
    { name: "backspace" },
    { name: "enter" },
  ]);
  assert.deepEqual(p.feed("\x1b[200~line 1\r\nline\t2\x1b[201~x"), [
    { name: "paste", text: "line 1\nline\t2" },
    { name: "text", text: "x" },
  ]);
});

Deno.test("KeyParser keeps a sequence split across chunks", () => {
  const p = new KeyParser();
  assert.deepEqual(p.feed("a\x1b"), [{ name: "text", text: "a" }]);
  assert.deepEqual(p.feed("[A"), [{ name: "up" }]);
  assert.deepEqual(p.feed("\x1b[200~half"), []);
  assert.deepEqual(p.feed(" more\x1b[201~"), [{ name: "paste", text: "half more" }]);
});

Deno.test("KeyParser drops escape sequences inside a paste", () => {
  const p = new KeyParser();
  assert.deepEqual(p.feed("\x1b[200~a\x1b]0;title\x07b\x1b[201~"), [
    { name: "paste", text: "a]0;titleb" },
  ]);
});

Deno.test("LineBuffer edits in the middle and submits", () => {
  const b = new LineBuffer();
  assert.deepEqual(typeInto(b, "helo\x1b[D"), ["redraw", "redraw"]);
  typeInto(b, "l");
  assert.equal(b.text, "hello");
  assert.equal(b.cursor, 4);
  assert.deepEqual(typeInto(b, "\r"), ["submit"]);
});

Deno.test("LineBuffer continues a line ending in a backslash and on Alt-Enter", () => {
  const b = new LineBuffer();
  assert.deepEqual(typeInto(b, "one\\\r"), ["redraw", "redraw"]);
  typeInto(b, "two\x1b\rthree");
  assert.equal(b.text, "one\ntwo\nthree");
  assert.deepEqual(typeInto(b, "\r"), ["submit"]);
});

Deno.test("LineBuffer Ctrl-C clears a line, then reports an interrupt; Ctrl-D exits when empty", () => {
  const b = new LineBuffer();
  typeInto(b, "abc");
  assert.deepEqual(typeInto(b, "\x03"), ["cleared"]);
  assert.equal(b.text, "");
  assert.deepEqual(typeInto(b, "\x03"), ["interrupt"]);
  assert.deepEqual(typeInto(b, "\x04"), ["eof"]);
});

Deno.test("LineBuffer walks the history and keeps the draft", () => {
  const b = new LineBuffer(["first", "second"]);
  typeInto(b, "draft");
  typeInto(b, "\x1b[A");
  assert.equal(b.text, "second");
  typeInto(b, "\x1b[A\x1b[A");
  assert.equal(b.text, "first");
  typeInto(b, "\x1b[B\x1b[B");
  assert.equal(b.text, "draft");
  b.commit("draft");
  typeInto(b, "\x1b[A");
  assert.equal(b.text, "draft");
});

Deno.test("LineBuffer moves by words and deletes a word with Ctrl-W", () => {
  const b = new LineBuffer();
  typeInto(b, "fix the bug\x17");
  assert.equal(b.text, "fix the ");
  typeInto(b, "\x1bb\x1bb");
  assert.equal(b.cursor, 0);
});

Deno.test("Renderer puts the cursor on the right row and column of a wrapped buffer", () => {
  let out = "";
  const r = new Renderer("> ", 2, (s) => out += s, () => 10);
  const b = new LineBuffer();
  b.text = "abcdefghijkl\nxy";
  b.cursor = 3;
  r.draw(b);
  // 14 columns for line 1 (2 rows), one row for line 2: end is 2 rows below, cursor on row 0 col 5.
  assert.equal(out, "\r\x1b[J> abcdefghijkl\r\n  xy\x1b[2A\r\x1b[5C");
  out = "";
  r.draw(b);
  assert.ok(out.startsWith("\r\x1b[J"), "cursor was on the first row");
  b.cursor = b.text.length;
  r.draw(b);
  out = "";
  r.draw(b);
  assert.ok(out.startsWith("\x1b[2A\r\x1b[J"), out);
});

Deno.test("textWidth() counts wide characters as two columns", () => {
  assert.equal(textWidth("ab"), 2);
  assert.equal(textWidth("日本"), 4);
});

Deno.test("KeyParser: Esc then a key gives both keys; a lone Esc waits, then is a key", () => {
  const p = new KeyParser();
  assert.deepEqual(p.feed("\x1bx"), [{ name: "escape" }, { name: "text", text: "x" }]);
  assert.deepEqual(p.feed("\x1b"), []);
  assert.equal(p.waitingEscape, true);
  assert.deepEqual(p.flushEscape(), [{ name: "escape" }]);
  assert.deepEqual(p.feed("y"), [{ name: "text", text: "y" }]);
});

Deno.test("KeyParser keeps pasted tabs; a typed Tab is the completion key", () => {
  const p = new KeyParser();
  assert.deepEqual(p.feed("\x1b[200~a\tb\x1b[201~\t"), [
    { name: "paste", text: "a\tb" },
    { name: "tab" },
  ]);
});

Deno.test("LineBuffer: Ctrl-R finds older entries containing the query; Esc restores the draft", () => {
  const b = new LineBuffer(["make test", "git status", "make lint"]);
  typeInto(b, "draft");
  typeInto(b, "\x12mak");
  assert.equal(b.text, "make lint");
  assert.equal(b.searchLabel, "search: mak › ");
  typeInto(b, "\x12");
  assert.equal(b.text, "make test");
  b.apply({ name: "escape" });
  assert.equal(b.text, "draft");
  assert.equal(b.searchLabel, undefined);
  typeInto(b, "\x12status\r");
  assert.equal(b.text, "git status");
});

Deno.test("LineBuffer: a typed ! on an empty line starts bash mode; a pasted one is text", () => {
  const buf = new LineBuffer();
  typeInto(buf, "!ls");
  assert.deepEqual([buf.shell, buf.text, buf.searchLabel], [true, "ls", "! bash › "]);
  // Backspace past the start leaves bash mode.
  typeInto(buf, "\x7f\x7f\x7f");
  assert.deepEqual([buf.shell, buf.text, buf.searchLabel], [false, "", undefined]);
  typeInto(buf, "\x1b[200~!ls\x1b[201~");
  assert.deepEqual([buf.shell, buf.text], [false, "!ls"]);
  const later = new LineBuffer();
  typeInto(later, "echo !x");
  assert.deepEqual([later.shell, later.text], [false, "echo !x"]);
});

Deno.test("LineBuffer: a bash-mode line is kept in history with its ! and comes back in bash mode", () => {
  const buf = new LineBuffer(["explain"]);
  typeInto(buf, "!git status");
  buf.commit(buf.text);
  assert.equal(buf.shell, false);
  typeInto(buf, "\x1b[A");
  assert.deepEqual([buf.shell, buf.text], [true, "git status"]);
  typeInto(buf, "\x1b[A");
  assert.deepEqual([buf.shell, buf.text], [false, "explain"]);
  typeInto(buf, "\x1b[B\x1b[B");
  assert.deepEqual([buf.shell, buf.text], [false, ""]);
});
