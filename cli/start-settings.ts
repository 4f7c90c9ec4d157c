import { DEFAULT_PORT, ENV } from "../common/consts.ts";

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
  return { ports, hosts };
}
