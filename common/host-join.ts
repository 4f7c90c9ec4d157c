/**
 * The command a new machine runs to join this Runlet as a runtime host (docs/hosts.md, "Running
 * a host on another machine"): what `runlet hosts token` prints after a new host token, and what
 * the dashboard's join-tokens page shows beside one. Made here only, so the two never differ.
 */
import { DEFAULT_PORT, ENV } from "./consts.ts";

/** Where the Worker reaches the new host: the operator writes the machine's own address in. */
export const JOIN_ADDRESS = `http://<its address>:${DEFAULT_PORT.host}`;

/**
 * `RUNLET_HOST_TOKEN=… npx runlet host --control-plane … --address …`. `token` defaults to a
 * placeholder, for where the token itself is printed apart (the CLI's stdout).
 */
export function hostJoinCommand(controlPlane: string, token = "<token>"): string {
  return `${ENV.hostToken}=${token} npx runlet host --control-plane ${controlPlane} --address ${JOIN_ADDRESS}`;
}
