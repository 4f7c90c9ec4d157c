import { describe, expect, it } from "vitest";
import { RunApiError } from "../errors.ts";
import { MAX_WEBHOOK_URL_LENGTH, webhookTarget } from "./target.ts";

/** The RunApiError that `webhookTarget(raw, allowPrivate)` throws (fails the test if none). */
function refusal(raw: string, allowPrivate = false): RunApiError {
  try {
    webhookTarget(raw, allowPrivate);
  } catch (err) {
    expect(err).toBeInstanceOf(RunApiError);
    return err as RunApiError;
  }
  throw new Error(`expected '${raw}' to be refused`);
}

const PRIVATE = /private, loopback or link-local.*RUNLET_WEBHOOK_ALLOW_PRIVATE=1/;
const NOT_HTTP = /must be an absolute http\(s\) URL/;

const PRIVATE_TARGETS = [
  // names
  "http://localhost/",
  "http://localhost:8787/hook",
  "http://LOCALHOST./",
  "http://foo.localhost/",
  "http://printer.local/",
  "http://metadata.google.internal/computeMetadata/v1/",
  // IPv4, including the forms the URL parser normalizes to dotted decimal
  "http://0.0.0.0/",
  "http://10.0.0.1/",
  "http://100.64.0.1/",
  "http://100.127.255.255/",
  "http://127.0.0.1/",
  "http://127.1/",
  "http://0x7f000001/",
  "http://0x7f.1/",
  "http://2130706433/",
  "http://169.254.169.254/latest/meta-data",
  "http://172.16.0.1/",
  "http://172.31.255.255/",
  "http://192.0.0.8/",
  "http://192.168.1.1/",
  "http://198.18.0.1/",
  "http://198.19.255.255/",
  "http://224.0.0.1/",
  "http://239.255.255.250/",
  "http://240.0.0.1/",
  "http://255.255.255.255/",
  // IPv6
  "http://[::]/",
  "http://[::1]/",
  "http://[0:0:0:0:0:0:0:1]:8080/",
  "http://[fc00::1]/",
  "http://[fd12:3456:789a::1]/",
  "http://[fe80::1]/",
  "http://[febf::1]/",
  "http://[ff02::1]/",
  "http://[::ffff:127.0.0.1]/",
  "http://[::ffff:7f00:1]/",
  "http://[::ffff:169.254.169.254]/",
  "http://[::ffff:10.0.0.1]/",
  // Other forms that carry an IPv4 address and reach it (found by an exploratory pass).
  "http://[::127.0.0.1]/",
  "http://[::ffff:0:7f00:1]/",
  "http://[64:ff9b::7f00:1]/",
  "http://[64:ff9b::169.254.169.254]/",
  "http://[2002:7f00:1::]/",
  "http://[2002:a9fe:a9fe::1]/",
  // Names of the network they are resolved on.
  "http://localhost../",
  "http://ip6-localhost/",
  "http://metadata/computeMetadata/v1/",
  "http://kubernetes.default.svc/",
  "http://router.lan/",
  "http://printer.home.arpa/",
];

describe("webhookTarget", () => {
  it("is undefined when no endpoint was given", () => {
    expect(webhookTarget(undefined, false)).toBeUndefined();
    expect(webhookTarget(undefined, true)).toBeUndefined();
  });

  it.each([
    ["https://example.com/hook?x=1", "https://example.com/hook?x=1"],
    ["http://93.184.216.34:8080/", "http://93.184.216.34:8080/"],
    ["https://[2606:4700::1111]/", "https://[2606:4700::1111]/"],
    ["https://hooks.example.com/a#frag", "https://hooks.example.com/a"],
    // The neighbours of the refused ranges are public.
    ["http://9.255.255.255/", "http://9.255.255.255/"],
    ["http://100.128.0.1/", "http://100.128.0.1/"],
    ["http://172.32.0.1/", "http://172.32.0.1/"],
    ["http://192.0.1.1/", "http://192.0.1.1/"],
    ["http://198.20.0.1/", "http://198.20.0.1/"],
    ["http://223.255.255.255/", "http://223.255.255.255/"],
    ["http://[fec0::1]/", "http://[fec0::1]/"],
    ["http://[::ffff:8.8.8.8]/", "http://[::ffff:808:808]/"],
    // Only the suffixes count: a name merely containing them is a public name.
    ["https://localhost.example.com/", "https://localhost.example.com/"],
    ["https://internal.example.com/", "https://internal.example.com/"],
  ])("accepts the public URL %s", (raw, href) => {
    const url = webhookTarget(raw, false);
    expect(url).toBeInstanceOf(URL);
    expect(url?.href).toBe(href);
    expect(url?.hash).toBe("");
  });

  it.each(PRIVATE_TARGETS)("refuses the private target %s", (raw) => {
    const err = refusal(raw);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(PRIVATE);
  });

  it.each([
    "ftp://example.com/hook",
    "javascript:alert(1)",
    "file:///etc/passwd",
    "ws://example.com/hook",
    "data:text/plain,hi",
    "/hook",
    "example.com/hook",
    "//example.com/hook",
    "",
    "http://",
    "https://exa mple.com/",
    "http://[::1/",
  ])("refuses '%s' as not an absolute http(s) URL", (raw) => {
    const err = refusal(raw);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(NOT_HTTP);
    expect(err.message).toContain(`'${raw}'`);
  });

  it("echoes at most 200 characters of a malformed value", () => {
    const raw = `ftp://example.com/${"a".repeat(500)}`;
    const err = refusal(raw);
    expect(err.message).toContain(`'${raw.slice(0, 200)}'`);
    expect(err.message).not.toContain(raw.slice(0, 201));
  });

  it.each([
    "https://alice:s3cr3t@example.com/hook",
    "https://alice@example.com/hook",
    "https://:s3cr3t@example.com/hook",
  ])("refuses credentials in %s without echoing them", (raw) => {
    const err = refusal(raw);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/must not contain credentials/);
    expect(err.message).not.toMatch(/alice|s3cr3t/);
  });

  it("refuses port 0, which parses but can take no delivery; keeps any other port, IDN and IPv6", () => {
    expect(refusal("https://example.com:0/hook").message).toBe(
      "webhookEndpoint has port 0, which no receiver can listen on",
    );
    expect(webhookTarget("https://example.com:65535/h#frag", false)?.href).toBe(
      "https://example.com:65535/h",
    );
    expect(webhookTarget("https://bücher.example/h", false)?.href).toBe(
      "https://xn--bcher-kva.example/h",
    );
    expect(webhookTarget("https://[2606:4700::1]:8443/h", false)?.href).toBe(
      "https://[2606:4700::1]:8443/h",
    );
  });

  it("refuses a URL longer than 2048 characters", () => {
    const prefix = "https://example.com/";
    const atLimit = prefix + "a".repeat(MAX_WEBHOOK_URL_LENGTH - prefix.length);
    expect(webhookTarget(atLimit, false)?.href).toBe(atLimit);
    const err = refusal(`${atLimit}a`);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/longer than 2048 characters/);
  });

  describe("with allowPrivate", () => {
    it.each(PRIVATE_TARGETS)("accepts the private target %s", (raw) => {
      expect(webhookTarget(raw, true)).toBeInstanceOf(URL);
    });

    it("still drops the fragment", () => {
      expect(webhookTarget("http://127.0.0.1:8787/hook#x", true)?.href).toBe(
        "http://127.0.0.1:8787/hook",
      );
    });

    it.each(["ftp://127.0.0.1/", "javascript:alert(1)", "file:///etc/passwd", "/hook", ""])(
      "still refuses '%s'",
      (raw) => {
        const err = refusal(raw, true);
        expect(err.status).toBe(400);
        expect(err.message).toMatch(NOT_HTTP);
      },
    );

    it("still refuses credentials and overlong URLs", () => {
      expect(refusal("http://u:p@localhost/", true).message).toMatch(/credentials/);
      expect(refusal(`http://localhost/${"a".repeat(2048)}`, true).message).toMatch(/longer than/);
    });
  });
});
