/**
 * Rendezvous hashing: each app's own order of the hosts, the same wherever it is computed (the
 * Worker's placement, the control plane's choice of where an app's `min_replicas` start), and
 * moving only the apps of a host that comes or goes. Imports nothing: the Worker bundles it.
 */

/** The hosts in the order of `key` (`{project}/{app}`), first the one it prefers. */
export function rendezvousOrder<T extends { id: string }>(key: string, hosts: readonly T[]): T[] {
  return [...hosts].sort((a, b) => weight(key, b.id) - weight(key, a.id));
}

/** The weight of `host` for `key` (FNV-1a, 32 bits). */
function weight(key: string, host: string): number {
  let hash = 0x811c9dc5;
  for (const char of `${key}\n${host}`) {
    hash ^= char.charCodeAt(0);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
