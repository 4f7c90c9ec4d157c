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
export function startSettingsFrom(env: NodeJS.ProcessEnv): StartSettings | string {
  const read = (name: string, least: number, most: number, fallback: number) =>
    wholeNumberSetting(env, name, fallback, least, most);
  const control = read(ENV.controlPort, 1, 65_535, DEFAULT_PORT.control);
  const api = read(ENV.apiPort, 1, 65_535, DEFAULT_PORT.api);
  const host = read(ENV.hostPort, 1, 65_535, DEFAULT_PORT.host);
  const hosts = read(ENV.hosts, 1, MAX_HOSTS, 1);
  for (const value of [control, api, host, hosts]) if (typeof value === "string") return value;
  const named: Array<[string, number]> = [
    [ENV.controlPort, control as number],
    [ENV.apiPort, api as number],
    [ENV.hostPort, host as number],
  ];
  for (const [i, [name, port]] of named.entries()) {
    const same = named.slice(i + 1).find(([, other]) => other === port);
    if (same)
      return `${name} and ${same[0]} are both ${port}: each component needs a port of its own`;
  }
  return {
    ports: { control: control as number, api: api as number, host: host as number },
    hosts: hosts as number,
  };
}
