import { describe, expect, it } from "vitest";
import { Framing } from "./http-framing.ts";

/** Whether the framing stands between answers after each of `parts`, read in turn. */
function betweens(parts: string[]) {
  const framing = new Framing("answers");
  return parts.map((part) => {
    framing.read(Buffer.from(part, "latin1"));
    return framing.between;
  });
}

/** Whether it stands between answers after `text`, read whole and read a byte at a time. */
function endsBetween(text: string) {
  const whole = betweens([text]).at(-1);
  const bytes = betweens([...text]).at(-1);
  expect(bytes).toBe(whole);
  return whole;
}

const ok = (body: string) => `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
const chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

describe("where workerd's answers begin and end", () => {
  it("is between answers before any, and after whole ones of either framing", () => {
    expect(new Framing("answers").between).toBe(true);
    expect(endsBetween(ok("hello"))).toBe(true);
    expect(endsBetween(ok(""))).toBe(true);
    expect(endsBetween(`${chunked}5\r\nhello\r\n1a;ext=1\r\n${"x".repeat(26)}\r\n0\r\n\r\n`)).toBe(
      true,
    );
    expect(endsBetween(`${chunked}0\r\nX-Trailer: 1\r\nY: 2\r\n\r\n`)).toBe(true);
    expect(endsBetween(`${chunked}6\r\na\r\n\r\nb\r\n0\r\n\r\n${ok("\r\n\r\n")}`)).toBe(true);
    expect(endsBetween(`${ok("one")}${chunked}3\r\ntwo\r\n0\r\n\r\n${ok("three")}`)).toBe(true);
    expect(
      endsBetween("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX: y\r\n\r\n"),
    ).toBe(true);
    // workerd's answer to HEAD: no Content-Length, no Transfer-Encoding.
    expect(endsBetween("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n")).toBe(true);
    expect(endsBetween("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n")).toBe(true);
  });

  it("is not between answers in the middle of one", () => {
    expect(betweens(["HTTP/1.1 200 OK\r\n", "Content-Length: 8\r\n\r\n", "part ", "one"])).toEqual([
      false,
      false,
      false,
      true,
    ]);
    expect(endsBetween(`${ok("one")}HTTP/1.1 200`)).toBe(false);
    expect(endsBetween("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart one\n")).toBe(false);
    expect(endsBetween(`${chunked}9\r\npart one\n\r\n`)).toBe(false);
    expect(endsBetween(`${chunked}9\r\npart one\n\r\n0\r\n`)).toBe(false);
    expect(endsBetween(`${chunked}9\r\npart one\n\r\n0\r\nX-Trailer: 1\r\n`)).toBe(false);
    expect(endsBetween(`${chunked}9\r\npart one\n`)).toBe(false);
  });

  it("never is again after an answer whose end only its close tells", () => {
    for (const head of [
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
      "not http\r\n\r\n",
      `${chunked}zz\r\n`,
    ]) {
      expect(endsBetween(`${head}${ok("later")}`), head).toBe(false);
    }
    // A head larger than workerd writes (160 KiB): whole, it would be an answer without a body.
    const huge = `HTTP/1.1 200 OK\r\nX: ${"x".repeat(170_000)}\r\n\r\n`;
    expect(betweens([`${huge}${ok("later")}`]).at(-1)).toBe(false);
    expect(betweens([huge.slice(0, 100_000), huge.slice(100_000), ok("later")]).at(-1)).toBe(false);
  });

  it("counts whole requests, with and without bodies, and whole answers but 1xx", () => {
    const requests = new Framing("requests");
    const post = (body: string) =>
      `POST /v4/p/app/run HTTP/1.1\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
    const chunkedPost =
      "POST /x HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
    for (const byte of `GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n${post("{}")}${chunkedPost}POST /y`) {
      requests.read(Buffer.from(byte, "latin1"));
    }
    expect([requests.ended, requests.between]).toEqual([3, false]);
    const answers = new Framing("answers");
    answers.read(Buffer.from(`HTTP/1.1 100 Continue\r\n\r\n${ok("a")}HTTP/1.1 204 No\r\n\r\n`));
    expect([answers.ended, answers.between]).toEqual([2, true]);
    requests.read(Buffer.from("\r\nnot a request line\r\n\r\n"));
    expect(requests.lost).toBe(true);
  });
});
