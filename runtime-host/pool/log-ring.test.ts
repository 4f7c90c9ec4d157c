import { describe, expect, it } from "vitest";
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
});
