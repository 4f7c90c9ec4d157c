/**
 * `runlet/webhooks` against the real signer (common/webhook-signature.ts), an HMAC computed
 * independently with node:crypto, and the receiver of docs/webhooks.md run as a real HTTP
 * server. Real crypto throughout, no mocks.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { webhookHeaders } from "../common/consts.ts";
import { signDelivery } from "../common/webhook-signature.ts";
import { verifyWebhook, verifyWebhookRequest } from "./index.mjs";

const SECRET = "whsec_1b7d1f0e6c2a4d8f9e3b5a7c";
const RUN_ID = "run_01m83seppqjs3bzyxswmmp1rr2";
const TS = 1_795_365_644;
/** The receiver's clock, in ms: the moment the delivery was signed. */
const NOW = TS * 1000;
const BODY = JSON.stringify({
  run_id: RUN_ID,
  status: "success",
  // Non-ASCII on purpose: the HMAC is over UTF-8 bytes.
  result: { greeting: "héllo ✓ 🚀", total: 42 },
  run_time_ms: 118,
  timestamp: "2026-11-22T16:40:44.318Z",
});
const NAMES = webhookHeaders();

interface Delivery {
  body: string;
  headers: Record<string, string>;
}

/** A delivery as the worker sends it, signed by the real signer. */
async function delivery(
  over: { secret?: string; requestId?: string; timestamp?: number; body?: string } = {},
): Promise<Delivery> {
  const requestId = over.requestId ?? RUN_ID;
  const timestamp = over.timestamp ?? TS;
  const body = over.body ?? BODY;
  return {
    body,
    headers: {
      "X-Request-Id": requestId,
      [NAMES.timestamp]: String(timestamp),
      [NAMES.signature]: await signDelivery(over.secret ?? SECRET, requestId, timestamp, body),
    },
  };
}

function verify(d: Delivery, options: { now?: number; toleranceSeconds?: number } = {}) {
  return verifyWebhook({ secret: SECRET, now: NOW, ...d, ...options });
}

function withHeader(d: Delivery, name: string, value: string | undefined): Delivery {
  const headers = { ...d.headers };
  if (value === undefined) delete headers[name];
  else headers[name] = value;
  return { ...d, headers };
}

const OK = { ok: true, requestId: RUN_ID, timestamp: TS };
/** Fixtures for the tables of cases below. */
const SIGNED = await delivery();
const wrong = (await delivery({ secret: "the-old-secret" })).headers[NAMES.signature] ?? "";
const alsoWrong = (await delivery({ secret: "another-one" })).headers[NAMES.signature] ?? "";

describe("verifyWebhook", () => {
  it("accepts a delivery signed by signDelivery", async () => {
    expect(await verify(await delivery())).toEqual(OK);
  });

  it("agrees with an HMAC-SHA256 computed independently with node:crypto", async () => {
    const hex = createHmac("sha256", SECRET).update(`${RUN_ID}.${TS}.${BODY}`).digest("hex");
    expect(hex).toMatch(/^[0-9a-f]{64}$/);
    const signed = await delivery();
    expect(signed.headers[NAMES.signature]).toBe(`v1,${hex}`);
    const independent = withHeader(signed, NAMES.signature, `v1,${hex}`);
    expect(await verify(independent)).toEqual(OK);
  });

  it.each([
    ["the body", { body: BODY.replace('"success"', '"failure"') }],
    ["the body, by one trailing space", { body: `${BODY} ` }],
    ["the request id", { "X-Request-Id": "run_01m83seppqjs3bzyxswmmp1rr3" }],
    ["the timestamp (still within the tolerance)", { [NAMES.timestamp]: String(TS - 1) }],
  ])("refuses a delivery whose %s was changed after signing", async (_, change) => {
    const signed = await delivery();
    expect(await verify(signed)).toEqual(OK);
    const { body, ...headerChanges } = change as Record<string, string>;
    const tampered = {
      body: body ?? signed.body,
      headers: { ...signed.headers, ...headerChanges },
    };
    expect(await verify(tampered)).toEqual({ ok: false, reason: "bad-signature" });
  });

  it("refuses a delivery signed with another secret", async () => {
    const other = await delivery({ secret: `${SECRET}x` });
    expect(await verify(other)).toEqual({ ok: false, reason: "bad-signature" });
    expect(await verifyWebhook({ ...other, secret: `${SECRET}x`, now: NOW })).toEqual(OK);
  });

  it("refuses a signature that differs in its last byte, is shorter or is longer", async () => {
    const signed = await delivery();
    const sig = signed.headers[NAMES.signature] ?? "";
    const last = sig.slice(-2) === "00" ? "01" : "00";
    for (const changed of [`${sig.slice(0, -2)}${last}`, sig.slice(0, -2), `${sig}00`]) {
      expect(changed).not.toBe(sig);
      expect(await verify(withHeader(signed, NAMES.signature, changed))).toEqual({
        ok: false,
        reason: "bad-signature",
      });
    }
  });

  it.each([
    [TS + 301, "stale-timestamp"],
    [TS - 301, "stale-timestamp"],
    [TS + 300, "ok"],
    [TS + 299, "ok"],
    [TS - 299, "ok"],
  ])("at %i s (signed at 1795365644 s) the answer is %s", async (nowSeconds, expected) => {
    const result = await verify(await delivery(), { now: nowSeconds * 1000 });
    expect(result).toEqual(expected === "ok" ? OK : { ok: false, reason: expected });
  });

  it("checks the timestamp against the real clock by default", async () => {
    const nowSeconds = Math.floor(Date.now() / 1000);
    for (const [timestamp, expected] of [
      [nowSeconds - 301, { ok: false, reason: "stale-timestamp" }],
      [nowSeconds + 301, { ok: false, reason: "stale-timestamp" }],
      [nowSeconds - 299, { ok: true, requestId: RUN_ID, timestamp: nowSeconds - 299 }],
    ] as const) {
      const d = await delivery({ timestamp });
      expect(await verifyWebhook({ secret: SECRET, ...d })).toEqual(expected);
    }
  });

  it("takes another tolerance", async () => {
    const d = await delivery();
    expect(await verify(d, { now: NOW + 61_000, toleranceSeconds: 60 })).toEqual({
      ok: false,
      reason: "stale-timestamp",
    });
    expect(await verify(d, { now: NOW + 59_000, toleranceSeconds: 60 })).toEqual(OK);
  });

  it.each(["X-Request-Id", NAMES.timestamp, NAMES.signature])(
    "refuses a delivery without %s, or with it empty",
    async (name) => {
      const signed = await delivery();
      expect(await verify(signed)).toEqual(OK);
      for (const value of [undefined, ""]) {
        expect(await verify(withHeader(signed, name, value))).toEqual({
          ok: false,
          reason: "missing-headers",
        });
      }
    },
  );

  it("refuses a delivery with no headers at all", async () => {
    expect(await verify({ body: BODY, headers: {} })).toEqual({
      ok: false,
      reason: "missing-headers",
    });
  });

  describe("malformed headers", () => {
    const signed = SIGNED;
    const hex = (signed.headers[NAMES.signature] ?? "").slice("v1,".length);
    it.each([
      ["another version", NAMES.signature, `v2,${hex}`],
      ["no comma", NAMES.signature, `v1${hex}`],
      ["no version", NAMES.signature, hex],
      ["non-hex", NAMES.signature, `v1,${"zz".repeat(32)}`],
      ["an empty signature", NAMES.signature, "v1,"],
      ["an odd number of hex digits", NAMES.signature, `v1,${hex.slice(1)}`],
      ["uppercase hex (the format is lowercase)", NAMES.signature, `v1,${hex.toUpperCase()}`],
      ["a timestamp that is not a number", NAMES.timestamp, "yesterday"],
      ["a timestamp in milliseconds with a fraction", NAMES.timestamp, `${TS}.5`],
      ["a negative timestamp", NAMES.timestamp, `-${TS}`],
    ])("%s: malformed-signature", async (_, name, value) => {
      expect(await verify(signed)).toEqual(OK);
      expect(await verify(withHeader(signed, name, value))).toEqual({
        ok: false,
        reason: "malformed-signature",
      });
    });
  });

  describe("several signatures (secret rotation)", () => {
    const signed = SIGNED;
    const right = signed.headers[NAMES.signature] ?? "";
    it.each([
      ["one wrong, then the right one", `${wrong} ${right}`, OK],
      ["the right one, then one wrong", `${right} ${wrong}`, OK],
      ["another version next to the right one", `v2,${"ab".repeat(32)} ${right}`, OK],
      ["as joined from repeated headers", `${right}, ${wrong}`, OK],
      ["two wrong ones", `${wrong} ${alsoWrong}`, { ok: false, reason: "bad-signature" }],
    ])("%s", async (_, header, expected) => {
      expect(await verify(withHeader(signed, NAMES.signature, header))).toEqual(expected);
    });
  });

  it("takes the new and the old secret while the caller changes its X-Webhook-Secret", async () => {
    // Runlet signs each delivery with the one secret of its run call: during a change, some
    // deliveries (retries, redeliveries) still come signed with the old one.
    const secret = ["the-new-secret", SECRET];
    const old = await delivery();
    const renewed = await delivery({ secret: "the-new-secret" });
    for (const d of [old, renewed])
      expect(await verifyWebhook({ ...d, secret, now: NOW })).toEqual(OK);
    const other = await delivery({ secret: "another-one" });
    expect(await verifyWebhook({ ...other, secret, now: NOW })).toEqual({
      ok: false,
      reason: "bad-signature",
    });
    for (const bad of [[], ["new", ""]])
      await expect(verifyWebhook({ ...old, secret: bad, now: NOW })).rejects.toThrow(TypeError);
  });

  it("reads a Headers instance and a plain object, whatever the names' case", async () => {
    const signed = await delivery();
    const lower = new Headers();
    for (const [name, value] of Object.entries(signed.headers))
      lower.set(name.toLowerCase(), value);
    expect(await verifyWebhook({ secret: SECRET, now: NOW, body: BODY, headers: lower })).toEqual(
      OK,
    );
    const upper = Object.fromEntries(
      Object.entries(signed.headers).map(([name, value]) => [name.toUpperCase(), value]),
    );
    expect(await verifyWebhook({ secret: SECRET, now: NOW, body: BODY, headers: upper })).toEqual(
      OK,
    );
    // Node's req.headers: lowercase names, repeated headers as arrays.
    const node = {
      "x-request-id": RUN_ID,
      "x-runlet-webhook-timestamp": String(TS),
      "x-runlet-webhook-signature": [
        signed.headers[NAMES.signature] ?? "",
        `v1,${"00".repeat(32)}`,
      ],
    };
    expect(await verifyWebhook({ secret: SECRET, now: NOW, body: BODY, headers: node })).toEqual(
      OK,
    );
  });

  it("takes the body as bytes, a Uint8Array or an ArrayBuffer", async () => {
    const signed = await delivery();
    const bytes = new TextEncoder().encode(BODY);
    const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    for (const body of [bytes, Buffer.from(BODY), buffer]) {
      expect(await verify({ ...signed, body } as unknown as Delivery)).toEqual(OK);
    }
    const changed = Uint8Array.from(bytes);
    changed.set([(changed.at(-2) ?? 0) ^ 1], changed.length - 2);
    expect(await verify({ ...signed, body: changed } as unknown as Delivery)).toEqual({
      ok: false,
      reason: "bad-signature",
    });
  });

  it("reads the headers of another brand", async () => {
    const acme = webhookHeaders("Acme");
    const signed = await delivery();
    const headers = {
      "X-Request-Id": RUN_ID,
      [acme.timestamp]: String(TS),
      [acme.signature]: signed.headers[NAMES.signature] ?? "",
    };
    expect(
      await verifyWebhook({ secret: SECRET, now: NOW, body: BODY, headers, brand: "Acme" }),
    ).toEqual(OK);
    expect(await verifyWebhook({ secret: SECRET, now: NOW, body: BODY, headers })).toEqual({
      ok: false,
      reason: "missing-headers",
    });
  });

  it("throws on an empty secret rather than checking against it", async () => {
    await expect(verifyWebhook({ ...(await delivery()), secret: "" })).rejects.toThrow(TypeError);
  });
});

describe("verifyWebhookRequest", () => {
  function request(d: Delivery): Request {
    return new Request("https://receiver.test/hooks/runlet", {
      method: "POST",
      headers: { "content-type": "application/json", ...d.headers },
      body: d.body,
    });
  }

  it("verifies a Fetch API Request and hands back its body", async () => {
    const req = request(await delivery());
    expect(await verifyWebhookRequest(req, SECRET, { now: NOW })).toEqual({ ...OK, body: BODY });
    expect(req.bodyUsed).toBe(true);
  });

  it("takes the new and the old secret, reading the body once", async () => {
    const req = request(await delivery());
    expect(await verifyWebhookRequest(req, ["the-new-secret", SECRET], { now: NOW })).toEqual({
      ...OK,
      body: BODY,
    });
  });

  it("refuses a tampered Request, without its body", async () => {
    const signed = await delivery();
    const req = request({ ...signed, body: BODY.replace("42", "43") });
    expect(await verifyWebhookRequest(req, SECRET, { now: NOW })).toEqual({
      ok: false,
      reason: "bad-signature",
    });
    expect(await verifyWebhookRequest(request(signed), SECRET, { now: NOW + 301_000 })).toEqual({
      ok: false,
      reason: "stale-timestamp",
    });
  });
});

/** The receivers of docs/webhooks.md, each the code block that starts with `opening`. */
const RECEIVERS = [
  {
    language: "js",
    opening: 'import { createServer } from "node:http";',
    command: process.execPath,
  },
  { language: "python", opening: "import hashlib, hmac, json, os, re, time", command: "python3" },
];

describe("the example receivers of docs/webhooks.md", () => {
  const root = fileURLToPath(new URL("..", import.meta.url));
  let child: ChildProcess | undefined;

  afterEach(() => {
    child?.kill();
    child = undefined;
  });

  it.each(RECEIVERS)(
    "answers 204 to a signed delivery and 401 to a tampered one ($language)",
    async ({ language, opening, command }) => {
      const docs = await readFile(new URL("../docs/webhooks.md", import.meta.url), "utf8");
      const start = docs.indexOf(`\`\`\`${language}\n${opening}\n`);
      expect(start).toBeGreaterThanOrEqual(0);
      const from = start + language.length + 4;
      const example = docs.slice(from, docs.indexOf("```", from));
      if (language === "js")
        expect(example).toContain('import { verifyWebhook } from "runlet/webhooks";');

      // The example as written, "runlet/webhooks" included: from the repository root it resolves
      // through package.json's "exports", as it would from node_modules.
      const args = language === "js" ? ["--input-type=module", "--eval", example] : ["-c", example];
      const proc = spawn(command, args, {
        cwd: root,
        env: { ...process.env, WEBHOOK_SECRET: SECRET, HOST: "127.0.0.1", PORT: "0" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child = proc;
      let output = "";
      proc.stdout?.on("data", (chunk) => {
        output += chunk;
      });
      proc.stderr?.on("data", (chunk) => {
        output += chunk;
      });
      const port = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no port within 10 s: ${output}`)), 10_000);
        proc.on("exit", (code) => reject(new Error(`the receiver exited (${code}): ${output}`)));
        proc.stdout?.on("data", () => {
          const match = /listening on port (\d+)/.exec(output);
          if (match) {
            clearTimeout(timer);
            resolve(Number(match[1]));
          }
        });
      });

      const post = (d: Delivery) =>
        fetch(`http://127.0.0.1:${port}/hooks/runlet`, {
          method: "POST",
          headers: { "content-type": "application/json", ...d.headers },
          body: d.body,
        });
      const signed = await delivery({ timestamp: Math.floor(Date.now() / 1000) });

      const valid = await post(signed);
      expect(valid.status).toBe(204);
      const tampered = await post({ ...signed, body: BODY.replace('"success"', '"failure"') });
      expect(tampered.status).toBe(401);
      expect(await tampered.text()).toBe("bad-signature");
      const unsigned = await post({ body: BODY, headers: { "X-Request-Id": RUN_ID } });
      expect(unsigned.status).toBe(401);
      expect(await unsigned.text()).toBe("missing-headers");
      const old = await delivery({ timestamp: Math.floor(Date.now() / 1000) - 600 });
      expect(await (await post(old)).text()).toBe("stale-timestamp");
      // A header of several entries is genuine when one matches (webhooks.md, "The signature").
      const name = NAMES.signature;
      const two = withHeader(signed, name, `v1,${"0".repeat(64)} ${signed.headers[name]}`);
      expect((await post(two)).status).toBe(204);

      // Only the two genuine ones reached the handler's work (the log may trail the answer).
      const done = `run ${RUN_ID}: success`;
      await vi.waitFor(() => expect(output.match(/run \S+: \w+/g)).toEqual([done, done]));
    },
  );
});
