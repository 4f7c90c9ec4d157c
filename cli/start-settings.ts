import { isIP } from "node:net";
import { networkInterfaces } from "node:os";
import { DEFAULT_PORT, ENV, LOOPBACK } from "../common/consts.ts";

/**
 * A whole-number setting of `runlet start` (its ports, its hosts, its logs' limits): its value,
 * `fallback` when unset or empty, or what is wrong with it in one line.
 */
export function wholeNumberSetting(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  least: number,
  most?: number,
): number | string {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (Number.isInteger(value) && value >= least && (most === undefined || value <= most))
    return value;
  const range = most === undefined ? `, at least ${least}` : ` from ${least} to ${most}`;
  return `${name} must be a whole number${range} (it is '${text}')`;
}

/** Runtime hosts `RUNLET_HOSTS` may ask for on one machine. */
export const MAX_HOSTS = 16;

export interface StartSettings {
  ports: { control: number; api: number; host: number };
  /** `RUNLET_HOSTS`: runtime hosts to run. */
  hosts: number;
  /** `RUNLET_LISTEN`: the address of the control plane and the run API (default loopback). */
  listen: string;
}

/** This machine's own IPv4 addresses, as its interfaces have them now. */
function ownAddresses(): Set<string> {
  const own = new Set<string>();
  for (const list of Object.values(networkInterfaces()))
    for (const { address, family } of list ?? []) if (family === "IPv4") own.add(address);
  return own;
}

/**
 * `RUNLET_LISTEN`: one of this machine's IPv4 addresses, which other machines reach it at. A
 * wildcard (0.0.0.0) is refused: the address is also the one handed to the runtime hosts for
 * the ends of async runs, and a wildcard names no machine.
 */
export function listenSetting(
  env: NodeJS.ProcessEnv,
  own: () => Set<string> = ownAddresses,
): string {
  const text = env[ENV.listen];
  if (text === undefined || text === "") return LOOPBACK;
  const where = `${ENV.listen} must be one of this machine's IPv4 addresses, which other machines reach it at`;
  if (isIP(text) !== 4) return `${where} (it is '${text}', not an IPv4 address)`;
  if (text === "0.0.0.0")
    return `${where} (it is '${text}', which listens everywhere but names no address to call back)`;
  if (!own().has(text)) return `${where} (it is '${text}', which no interface here has)`;
  return text;
}

/**
 * `runlet start`'s ports and host count from the environment, or what is wrong with them in
 * one line. A port given twice was taken: the Worker's health check, sent to the control
 * plane's port, was answered by the control plane, so the start said "Runlet is ready" and the
 * Worker, refused its port, was restarted five times before everything stopped. And a port
 * that was no number read "must be a number, not a NaN".
 */
/** The setting that names each component's port. */
export const PORT_SETTINGS = {
  control: ENV.controlPort,
  api: ENV.apiPort,
  host: ENV.hostPort,
} as const;

export function startSettingsFrom(env: NodeJS.ProcessEnv): StartSettings | string {
  const keys = ["control", "api", "host"] as const;
  const ports: StartSettings["ports"] = { ...DEFAULT_PORT };
  for (const key of keys) {
    const port = wholeNumberSetting(env, PORT_SETTINGS[key], DEFAULT_PORT[key], 1, 65_535);
    if (typeof port === "string") return port;
    ports[key] = port;
  }
  const hosts = wholeNumberSetting(env, ENV.hosts, 1, 1, MAX_HOSTS);
  if (typeof hosts === "string") return hosts;
  for (const [i, key] of keys.entries()) {
    const same = keys.slice(i + 1).find((other) => ports[other] === ports[key]);
    if (same)
      return `${PORT_SETTINGS[key]} and ${PORT_SETTINGS[same]} are both ${ports[key]}: each component needs a port of its own`;
  }
  const listen = listenSetting(env);
  if (!isIP(listen)) return listen;
  return { ports, hosts, listen };
}

/**
 * The tests' knobs, as Worker variables: the pauses between webhook attempts
 * (`RUNLET_WEBHOOK_RETRY_DELAYS_MS`, "1000,20000"), between health checks of a host that
 * holds a call (`RUNLET_HOST_PROBE_MS`), and how long the run API keeps the control plane's
 * word on a token (`RUNLET_AUTH_CACHE_MS`, 10 s unset).
 */
export function testKnobs(): string {
  const delays = process.env.RUNLET_WEBHOOK_RETRY_DELAYS_MS;
  const ms = (knob: string, name: string) => {
    const value = process.env[knob];
    return value && /^\d+$/.test(value) ? `${name}=${value}\n` : "";
  };
  return (
    (delays && /^\d+(,\d+)*$/.test(delays) ? `WEBHOOK_RETRY_DELAYS_MS=${delays}\n` : "") +
    ms("RUNLET_HOST_PROBE_MS", "HOST_PROBE_MS") +
    ms("RUNLET_AUTH_CACHE_MS", "AUTH_CACHE_MS")
  );
}
