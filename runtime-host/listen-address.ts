import { isIP } from "node:net";

/**
 * Where a host listens unless told (RUNLET_HOST_LISTEN): the IP address it gives the Worker, or
 * loopback when it gives a name (a tunnel or a proxy on this machine forwards to it).
 */
export function listenAddressOf(address: string | undefined): string | undefined {
  if (!address) return undefined;
  const host = new URL(address).hostname.replace(/^\[|\]$/g, "");
  return isIP(host) ? host : undefined;
}
