// A custom app's answer as a run's outcome: JSON parsed, text as it is, a body that is not text
// kept in base64 and named so.
import { describe, expect, it } from "vitest";
import { bodyOf } from "../../common/bytes.ts";
import { answerOutcome, deliveryBody, hostOutcome } from "./outcome.ts";

describe("a custom app's answer as an outcome", () => {
  it("keeps JSON and text answers as they were: the JSON's text, or the text, with no encoding named", () => {
    const json = answerOutcome(200, "application/json", { body: '{"a":1}' }, 5);
    const at = "2026-11-26T11:00:00.000Z";
    expect(JSON.parse(deliveryBody("run_1", json, at))).toEqual({
      run_id: "run_1",
      status: "success",
      result: { a: 1 },
      status_code: 200,
      run_time_ms: 5,
      timestamp: at,
    });
    const text = answerOutcome(503, "text/plain", bodyOf(new TextEncoder().encode("héllo")), 5);
    expect(text).toEqual({
      status: "failure",
      error: { message: "the app answered 503" },
      result: "héllo",
      status_code: 503,
      run_time_ms: 5,
    });
  });

  it("delivers a JSON answer's text as it came: ids past 2^53, 1e400, keys given twice", () => {
    // Parsed and written again, the id arrived as 1.2345678901234568e+22 and 1e400 as null.
    const text = '{"id": 12345678901234567890123, "x": 1e400, "d": 1, "d": 2, "s": "$&\\ud800"}';
    const answer = answerOutcome(201, "application/json; charset=utf-8", { body: `${text}\n` }, 2);
    const body = deliveryBody("run_2", answer, "2026-11-26T11:00:00.000Z");
    expect(body).toBe(
      `{"run_id":"run_2","status":"success","result":${text},"status_code":201,"run_time_ms":2,"timestamp":"2026-11-26T11:00:00.000Z"}`,
    );
    // A JSON answer of 500 is a failure that still carries it; text that only claims JSON is text.
    const failed = answerOutcome(500, "application/json", { body: "[1e400]" }, 2);
    expect(deliveryBody("run_3", failed, "t")).toContain('"result":[1e400]');
    const notJson = answerOutcome(200, "application/json", { body: "{oops" }, 2);
    expect(JSON.parse(deliveryBody("run_4", notJson, "t")).result).toBe("{oops");
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
