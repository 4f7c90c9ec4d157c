// A custom app's answer as a run's outcome: JSON parsed, text as it is, a body that is not text
// kept in base64 and named so.
import { describe, expect, it } from "vitest";
import { bodyOf } from "../../common/bytes.ts";
import { answerOutcome, hostOutcome } from "./outcome.ts";

describe("a custom app's answer as an outcome", () => {
  it("keeps JSON and text answers as they were: parsed, or the text, with no encoding named", () => {
    const json = answerOutcome(200, "application/json", { body: '{"a":1}' }, 5);
    expect(json).toEqual({ status: "success", result: { a: 1 }, status_code: 200, run_time_ms: 5 });
    const text = answerOutcome(503, "text/plain", bodyOf(new TextEncoder().encode("héllo")), 5);
    expect(text).toEqual({
      status: "failure",
      error: { message: "the app answered 503" },
      result: "héllo",
      status_code: 503,
      run_time_ms: 5,
    });
  });

  it("passes a body that is not UTF-8 as base64, with result_encoding saying so", () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const http = { status_code: 200, content_type: "image/png", ...bodyOf(png) };
    expect(hostOutcome({ status: "success", http, runTimeMs: 3 })).toEqual({
      status: "success",
      result: "iVBORw0KGgo=",
      result_encoding: "base64",
      status_code: 200,
      run_time_ms: 3,
    });
    // Even when its content type says JSON: it is not parsed.
    const odd = answerOutcome(
      200,
      "application/json",
      { body: "e30=", body_encoding: "base64" },
      1,
    );
    expect(odd).toMatchObject({ result: "e30=", result_encoding: "base64" });
  });
});
