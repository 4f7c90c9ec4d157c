// --expires is checked as the control plane checks expiresAt, before any request: `90` and
// `2027-01-01` went to the server and came back as its 400 (a failure in the audit log).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { expect, it } from "vitest";
import { ENV } from "../common/consts.ts";
import { expiresAtSchema, expiryMs } from "../control-plane/routes/expiry.ts";
import { runlet } from "./commands/test-support.ts";
import { expiryOf } from "./expiry.ts";

const NOW = Date.parse("2026-11-27T06:00:00Z");

it("takes a duration, an RFC 3339 time or a date (its end, UTC), each as the control plane takes it", () => {
  const taken = {
    "30d": "2026-12-27T06:00:00.000Z",
    "12h": "2026-11-27T18:00:00.000Z",
    "3650d": "2036-11-24T06:00:00.000Z",
    "2027-01-31T00:00:00Z": "2027-01-31T00:00:00Z",
    "2027-01-31T00:00:00.5+02:00": "2027-01-31T00:00:00.5+02:00",
    // RFC 3339 §5.6 lets T and Z be written t and z; sent in upper case.
    "2027-01-31t00:00:00z": "2027-01-31T00:00:00Z",
    "2027-01-01": "2027-01-01T23:59:59Z",
    "2028-02-29": "2028-02-29T23:59:59Z",
  };
  for (const [given, expiresAt] of Object.entries(taken)) {
    expect(expiryOf(given, NOW)).toBe(expiresAt);
    // What the CLI sends, the control plane takes.
    expect(expiresAtSchema.safeParse(expiresAt).success, given).toBe(true);
    expect(() => expiryMs(expiresAt, NOW), given).not.toThrow();
  }
});

it("refuses anything else in one line saying what it takes: not a time, past, or too far ahead", () => {
  for (const given of [
    "90",
    "11y",
    "1y",
    "soon",
    "2027-02-30",
    "2027-13-01",
    "2027-01-01T00:00Z",
    "2027-01-01t00:00:00",
    "2027-01-01 00:00:00Z",
    "2027-01-01T00:00:00",
    "Jan 1 2027",
    "0d",
    "2026-11-26",
    "3651d",
    "2037-01-01T00:00:00Z",
  ]) {
    let said = "";
    try {
      expiryOf(given, NOW);
    } catch (err) {
      said = (err as Error).message;
    }
    expect(said, given).toMatch(
      /^--expires .*a duration from now \(30d, 12h, 90m, 45s\), an RFC 3339 time \(2027-01-31T00:00:00Z\) or a date \(2027-01-31: the end of that day, UTC\), at most 3650 days ahead/,
    );
    expect(said).toContain(given);
    expect(said).not.toContain("\n");
  }
});

it("refuses a bad --expires of tokens create, users create and users token before any request", async () => {
  let requests = 0;
  const server = createServer((_req, res) => {
    requests++;
    res.writeHead(500).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const env = { [ENV.baseUrl]: url, [ENV.apiUrl]: url, [ENV.project]: "prj_1", [ENV.token]: "t" };
  try {
    for (const argv of [
      ["tokens", "create", "--name", "ci", "--expires", "90"],
      ["users", "create", "--name", "Ann", "--expires", "2027-02-30"],
      ["users", "token", "--expires", "4000d"],
      ["users", "token", "usr_1", "--expires", "11y"],
    ]) {
      const done = await runlet(argv, env);
      expect(done.code).toBe(1);
      expect(done.stderr).toMatch(/^runlet \w+: --expires .* at most 3650 days ahead/);
      expect(done.stderr.split("\n")).toHaveLength(1);
    }
    expect(requests).toBe(0);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
