/**
 * What a registration may not take from a live host (heard from within `DOWN_AFTER_MS`, not
 * stopped): its address under another join token, or its name (docs/hosts.md, "Registration and
 * heartbeats"). Each refusal is a 409 saying which host holds it and what to do; `held` in its
 * body tells the host which (runtime-host/refusal.ts).
 */
import { and, eq, ne, sql } from "drizzle-orm";
import { DOWN_AFTER_MS, type Registration } from "../../common/protocol/hosts.ts";
import type { Database } from "../db/index.ts";
import { hosts } from "../db/schema.ts";
import { ApiError } from "../errors.ts";

/**
 * Refuses (409) an address a live host registered with another token: a second machine whose
 * `runlet host` had no `--address` registered at `http://127.0.0.1:8790`, took over the entry of
 * `runlet start`'s own host (its id, name and token), and the two swapped at every heartbeat.
 * The same token is the same host come back; a host down or stopped may be taken over. A host
 * killed and restarted under another token is refused until its old entry is down: the host
 * tries again that long (runtime-host/membership.ts), then takes it over, drained if it was.
 */
export async function addressFree(db: Database, tokenId: string, address: string, now: number) {
  const [held] = await db
    .select({
      id: hosts.id,
      name: hosts.name,
      tokenId: hosts.tokenId,
      state: hosts.state,
      seenAt: hosts.seenAt,
    })
    .from(hosts)
    .where(and(eq(hosts.address, address), sql`${hosts.seenAt} >= ${now - DOWN_AFTER_MS}`));
  if (!held || held.tokenId === tokenId || held.state === "stopped") return;
  const { ago, downIn } = silence(held.seenAt, now);
  throw new ApiError(
    "conflict",
    `${address} is the address of runtime host '${held.name}' (${held.id}), ${held.state}, heard from ${ago} s ago under another join token. If it is another machine, give this host the address the Worker reaches it at (runlet host --address http://<its address>:<port>). If it is this host before a restart, its entry is down in ${downIn} s unless it is heard from again, and runlet host tries again until then and takes it over${held.state === "drained" ? `, still drained (runlet hosts resume ${held.id})` : ""}`,
    { held: "address" },
  );
}

/**
 * Refuses (409) a name a live host at another address has: two hosts of one name could be told
 * apart only by their ids, and `runlet hosts drain NAME` listed both (until 2026-11-27 the join
 * was taken without a word). The host at the same address is this one come back, under its id;
 * a host restarted at another address is refused until its old entry is down (it tries again
 * that long, as for an address held).
 */
export async function nameFree(db: Database, reg: Registration, now: number) {
  const [held] = await db
    .select({
      id: hosts.id,
      address: hosts.address,
      state: hosts.state,
      seenAt: hosts.seenAt,
    })
    .from(hosts)
    .where(
      and(
        eq(hosts.name, reg.name),
        ne(hosts.address, reg.address),
        ne(hosts.state, "stopped"),
        sql`${hosts.seenAt} >= ${now - DOWN_AFTER_MS}`,
      ),
    )
    .limit(1);
  if (!held) return;
  const { ago, downIn } = silence(held.seenAt, now);
  throw new ApiError(
    "conflict",
    `the name '${reg.name}' is runtime host ${held.id}'s, at ${held.address}, ${held.state}, heard from ${ago} s ago. Give this host another name (runlet host --name NAME), or stop the other first (Ctrl-C on its runlet host, or revoke its token with runlet hosts revoke). If it is this host before a restart at another address, its entry is down in ${downIn} s unless it is heard from again, and runlet host tries again until then and takes the name over`,
    { held: "name" },
  );
}

/** Seconds since a live host `seenAt` was heard from, and until its entry is down (at least 1). */
function silence(seenAt: number, now: number): { ago: number; downIn: number } {
  return {
    ago: Math.max(0, Math.round((now - seenAt) / 1000)),
    downIn: Math.max(1, Math.ceil((seenAt + DOWN_AFTER_MS - now) / 1000)),
  };
}
