import type { Context } from "hono";
import type { SigningKeys } from "./auth/keys.ts";
import { authenticate, type Principal, type Role, roleIn } from "./auth/tokens.ts";
import type { Database } from "./db/index.ts";
import type { RuntimeHost } from "./host-client.ts";

/** Everything the control-plane app is given; it owns no process-level state itself. */
export interface Deps {
  db: Database;
  keys: SigningKeys;
  publicKeys: ReadonlyMap<string, CryptoKey>;
  host: RuntimeHost;
}

export type AppEnv = { Variables: { deps: Deps } };

export type Ctx = Context<AppEnv>;

/** Authenticates the caller and resolves their role in the path's project (401/403/404). */
export async function projectAccess(
  c: Ctx,
): Promise<{ principal: Principal; role: Role; projectId: string }> {
  const { db, publicKeys } = c.var.deps;
  const principal = await authenticate(db, publicKeys, c.req.header("authorization"));
  const projectId = c.req.param("projectId") ?? "";
  const role = await roleIn(db, principal, projectId);
  return { principal, role, projectId };
}
