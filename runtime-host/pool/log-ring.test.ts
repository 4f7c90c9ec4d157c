import { describe, expect, it } from "vitest";
import { LOG_RING_BYTES, LOG_RING_CHUNKS } from "../limits.ts";
import { LogRing } from "./log-ring.ts";

describe("LogRing", () => {
  it("keeps everything while under capacity, in order, per stream", () => {
    const ring = new LogRing(100);
    ring.append("stdout", Buffer.from("hello "));
    ring.append("stderr", Buffer.from("world"));
    expect(ring.text()).toBe("hello world");
    expect(ring.chunks().map((c) => c.stream)).toEqual(["stdout", "stderr"]);
    expect(ring.size).toBe(11);
    expect(ring.dropped).toBe(0);
  });

  it("holds at most maxChunks pieces, the newest, however few bytes each has", () => {
    const ring = new LogRing(LOG_RING_BYTES); // and the host's bound on pieces
    // One-byte writes: 256 KiB of them held some 50 MB of the host's memory.
    for (let i = 0; i < 100_000; i++) ring.append("stdout", Buffer.from(String(i % 10)));
    expect(ring.chunks()).toHaveLength(LOG_RING_CHUNKS);
    expect(ring.size).toBe(LOG_RING_CHUNKS);
    expect(ring.dropped).toBe(100_000 - LOG_RING_CHUNKS);
    expect(ring.text().endsWith("789")).toBe(true);
  });

  it("drops the oldest bytes past capacity, even inside a chunk", () => {
    const ring = new LogRing(10);
    ring.append("stdout", Buffer.from("0123456"));
    ring.append("stdout", Buffer.from("789ab"));
    expect(ring.text()).toBe("23456789ab");
    expect(ring.size).toBe(10);
    expect(ring.dropped).toBe(2);
    ring.append("stderr", Buffer.from("a chunk longer than the ring"));
    expect(ring.text()).toBe("n the ring");
    expect(ring.chunks()).toHaveLength(1);
    expect(ring.dropped).toBe(30);
  });

  it("drops the rest of a character its oldest bytes cut", () => {
    const ring = new LogRing(5);
    ring.append("stdout", Buffer.from("a✓b")); // 5 bytes
    ring.append("stdout", Buffer.from("cd")); // 7: "a" and a byte of "✓" go, then its rest
    expect(ring.text()).toBe("bcd");
    expect(ring.size + ring.dropped).toBe(7);
    ring.append("stderr", Buffer.from("😀😀")); // longer than the ring: the first one's rest goes
    expect(ring.text()).toBe("😀");
  });

  it("reads a process's output cut anywhere as whole characters, per stream", () => {
    const ring = new LogRing(100);
    const bytes = Buffer.from("é✓😀\n");
    for (const byte of bytes) {
      ring.read("stdout", Buffer.from([byte]));
      ring.read("stderr", Buffer.from([byte]));
    }
    ring.read("stdout", Buffer.from([0xe2, 0x9c]));
    ring.endReads();
    for (const chunk of ring.chunks().slice(0, -1))
      expect(chunk.data.toString()).not.toContain("\uFFFD");
    expect(ring.text()).toBe("éé✓✓😀😀\n\n\uFFFD");
  });

  it("keeps the newest of many small chunks, in order", () => {
    const ring = new LogRing(100);
    for (let i = 0; i < 10_000; i++)
      ring.append(i % 2 ? "stderr" : "stdout", Buffer.from(`${i}\n`));
    const chunks = ring.chunks();
    expect(chunks.map((c) => c.data.toString()).join("")).toBe(ring.text());
    expect(ring.text().endsWith("9998\n9999\n")).toBe(true);
    expect(chunks.at(-1)?.stream).toBe("stderr");
    expect(ring.size).toBe(100);
    expect(ring.dropped + ring.size).toBe(
      Array.from({ length: 10_000 }, (_, i) => `${i}\n`).join("").length,
    );
  });

  it("drops the rest of a line its oldest bytes cut, counted as dropped, per stream", () => {
    const ring = new LogRing(20);
    ring.append("stdout", Buffer.from("first line\nsecond "));
    ring.append("stderr", Buffer.from("err\n"));
    ring.append("stdout", Buffer.from("line\nthird\n")); // 33 bytes: 13 go, to "se"
    // Not "cond line": the cut line's rest goes too (over two pieces), and stderr's stays.
    expect(ring.text()).toBe("err\nthird\n");
    expect(ring.size + ring.dropped).toBe(33);
    expect(ring.dropped).toBe(23);
    // A stream whose held bytes all go mid-line: its next output still continues that line.
    ring.append("stdout", Buffer.from("abc"));
    ring.append("stderr", Buffer.from("x".repeat(20)));
    ring.append("stdout", Buffer.from("rest\nnext\n"));
    expect(ring.text()).toBe(`${"x".repeat(10)}next\n`);
  });

  it("keeps a line whose rest is long, cut, rather than drop much of a stream", () => {
    const ring = new LogRing(10_000);
    ring.append("stdout", Buffer.from(`${"a".repeat(9_000)}\n`));
    ring.append("stdout", Buffer.from("b".repeat(2_000)));
    expect(ring.text()).toBe(`${"a".repeat(7_999)}\n${"b".repeat(2_000)}`);
    ring.append("stdout", Buffer.from(`\n${"c".repeat(4_000)}`));
    expect(ring.text()).toBe(`${"b".repeat(2_000)}\n${"c".repeat(4_000)}`);
  });
});
