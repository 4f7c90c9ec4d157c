import { describe, expect, it } from "vitest";
import { functionInput, functionInputOf, MAX_INPUT_DEPTH } from "./function-input.ts";

/** How a body refused as a function's input goes on: what to send instead. */
const INSTEAD =
  "a managed function's input is a JSON body: send a file in it as a base64 string, or deploy a custom app, which gets the body's bytes as they are";

const nested = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;

describe("a function's input", () => {
  it("is null for a blank body and the JSON value otherwise", () => {
    expect(functionInput(" \n")).toEqual({ ok: true, value: null });
    expect(functionInput('{"a":[1,{"b":null}]}')).toEqual({
      ok: true,
      value: { a: [1, { b: null }] },
    });
    expect(functionInput("{nope")).toEqual({
      ok: false,
      message: `request body is not valid JSON: ${INSTEAD}`,
    });
    // With a byte-order mark, as the host's Buffer decodes it (the Worker's decoder drops it).
    const bom = Buffer.from([0xef, 0xbb, 0xbf, ...Buffer.from('{"bom":1}')]);
    expect(functionInput(bom.toString("utf8"))).toEqual({ ok: true, value: { bom: 1 } });
    expect(functionInput(new TextDecoder().decode(bom))).toEqual({ ok: true, value: { bom: 1 } });
  });

  it("says how to send a file instead, when the body is one (a form upload, an image's bytes)", () => {
    const form =
      '--x\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhi\r\n--x--\r\n';
    expect(functionInputOf(new TextEncoder().encode(form))).toEqual({
      ok: false,
      message: `request body is not valid JSON: ${INSTEAD}`,
    });
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    expect(functionInputOf(png)).toEqual({
      ok: false,
      message: `request body is not valid UTF-8: ${INSTEAD}`,
    });
    expect(INSTEAD).toMatch(/base64 string, or deploy a custom app/);
  });

  it("nests at most MAX_INPUT_DEPTH arrays and objects, counting neither inside strings", () => {
    expect(functionInput(nested(MAX_INPUT_DEPTH)).ok).toBe(true);
    expect(functionInput(nested(MAX_INPUT_DEPTH + 1))).toEqual({
      ok: false,
      message: "request body nests arrays and objects deeper than 1000 levels",
    });
    const mixed = `${'{"a":['.repeat(500)}1${"]}".repeat(500)}`; // 1,000 levels
    expect(functionInput(mixed).ok).toBe(true);
    const text = JSON.stringify({ s: `\\"${"[{".repeat(5_000)}`, t: ['"]]', "\\\\"] });
    expect(functionInput(text)).toEqual({ ok: true, value: JSON.parse(text) });
  });
});
