/**
 * Checks a run's `webhookEndpoint` before the Worker accepts it. Deliveries are sent from inside
 * the service, so an endpoint on a loopback, private or link-local address would let any caller
 * make the service call its own internals (SSRF, e.g. the cloud metadata endpoint); such targets
 * are refused unless RUNLET_WEBHOOK_ALLOW_PRIVATE=1, which local development needs.
 */
import { parseHttpUrl } from "../../common/http-url.ts";
import { RunApiError } from "../errors.ts";

/** Longer URLs are refused outright: no real receiver needs one, and they are stored per run. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;
/** How much of a refused value an error message echoes. */
const ECHO_LENGTH = 200;

/** IPv4 ranges that are not the public internet, as [network, prefix length]. */
const PRIVATE_V4: readonly (readonly [string, number])[] = [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, where cloud metadata services live
  ["172.16.0.0", 12],
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.168.0.0", 16],
  ["198.18.0.0", 15], // benchmarking
  ["224.0.0.0", 3], // multicast (224/4) and reserved (240/4, up to 255.255.255.255)
];

/**
 * The URL a run's webhook deliveries go to, or undefined when none was asked for. Throws a 400
 * RunApiError when `raw` is not an acceptable target. The fragment is dropped: it never reaches
 * the receiver.
 */
export function webhookTarget(raw: string | undefined, allowPrivate: boolean): URL | undefined {
  if (raw === undefined) return undefined;
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) {
    throw new RunApiError(
      400,
      `webhookEndpoint is longer than ${MAX_WEBHOOK_URL_LENGTH} characters (${raw.length})`,
    );
  }
  const url = parseHttpUrl(raw);
  if (!url) {
    throw new RunApiError(
      400,
      `webhookEndpoint must be an absolute http(s) URL, got '${raw.slice(0, ECHO_LENGTH)}'`,
    );
  }
  // Port 0 parses but names no port a receiver can listen on: every attempt failed at once.
  if (url.port === "0") {
    throw new RunApiError(400, "webhookEndpoint has port 0, which no receiver can listen on");
  }
  // Not echoed: the point is to keep the secret out of run records and logs.
  if (url.username || url.password) {
    throw new RunApiError(
      400,
      "webhookEndpoint must not contain credentials (user:password@); use X-Webhook-Secret to authenticate deliveries",
    );
  }
  if (!allowPrivate && isPrivateHost(url.hostname)) {
    throw new RunApiError(
      400,
      `webhookEndpoint host '${url.hostname.slice(0, ECHO_LENGTH)}' is a private, loopback or link-local target; set RUNLET_WEBHOOK_ALLOW_PRIVATE=1 to allow it for local development`,
    );
  }
  url.hash = "";
  return url;
}

/**
 * Whether a URL's hostname (as the WHATWG parser normalizes it: IPv4 in dotted decimal, IPv6
 * compressed in brackets) names a non-public target. A Worker cannot resolve DNS, so a name is
 * judged by its suffix alone: a public name that resolves to a private address is not caught here.
 */
function isPrivateHost(hostname: string): boolean {
  if (hostname.startsWith("[")) return isPrivateV6(hostname.slice(1, -1));
  const v4 = parseV4(hostname);
  if (v4 !== undefined) return isPrivateV4(v4);
  // "localhost." (and "localhost..") is the same host as "localhost". A name of one label
  // ("metadata", "ip6-localhost") is a name of the network it is resolved on, never a public one.
  const name = hostname.replace(/\.+$/, "");
  return !name.includes(".") || /\.(localhost|local|internal|svc|lan|home\.arpa)$/.test(name);
}

function parseV4(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) {
    return undefined;
  }
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
}

function isPrivateV4(ip: number): boolean {
  return PRIVATE_V4.some(([network, prefix]) => {
    const base = parseV4(network) ?? 0;
    const size = 2 ** (32 - prefix);
    return Math.floor(ip / size) === Math.floor(base / size);
  });
}

function isPrivateV6(text: string): boolean {
  const g = parseV6(text);
  // The URL parser accepted it, so this should not happen; refusing is the safe answer.
  if (!g) return true;
  const [g0 = 0, , , , g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroUpTo(7) && (g7 === 0 || g7 === 1)) return true; // :: and ::1
  if ((g0 & 0xfe00) === 0xfc00) return true; // fc00::/7, unique local
  if ((g0 & 0xffc0) === 0xfe80) return true; // fe80::/10, link-local
  if ((g0 & 0xff00) === 0xff00) return true; // ff00::/8, multicast
  // Forms that carry an IPv4 address, and reach it: ::ffff:a.b.c.d (mapped), ::a.b.c.d
  // (compatible), ::ffff:0:a.b.c.d (translated), 64:ff9b::a.b.c.d (NAT64), and 6to4's 2002:ab:cd::.
  const v4 = (hi: number, lo: number) => isPrivateV4(hi * 0x10000 + lo);
  if (zeroUpTo(5) && (g5 === 0xffff || g5 === 0)) return v4(g6, g7);
  if (zeroUpTo(4) && g4 === 0xffff && g5 === 0) return v4(g6, g7);
  if (g0 === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return v4(g6, g7);
  if (g0 === 0x2002) return v4(g[1] ?? 0, g[2] ?? 0);
  return false;
}

/** The eight 16-bit groups of an IPv6 address, or undefined when it is not one. */
function parseV6(text: string): number[] | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groups = (half: string | undefined): number[] | undefined => {
    if (!half) return [];
    const out: number[] = [];
    const parts = half.split(":");
    for (const [i, part] of parts.entries()) {
      const v4 = i === parts.length - 1 ? parseV4(part) : undefined;
      if (v4 !== undefined) out.push(Math.floor(v4 / 0x10000), v4 % 0x10000);
      else if (/^[0-9a-f]{1,4}$/i.test(part)) out.push(Number.parseInt(part, 16));
      else return undefined;
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = groups(halves[1]);
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  return [...head, ...new Array<number>(missing).fill(0), ...tail];
}
