import type { Context } from "hono";
import type { PublicKeys } from "../common/jwt.ts";
import type { AuditAction, AuditTarget } from "./audit/actions.ts";
import type { DerivedKeys } from "./auth/secret-keys.ts";
import type { KeyStore, SigningKeys } from "./auth/signing.ts";
import type { Principal, Role } from "./auth/tokens.ts";
import type { BundleStore } from "./bundles.ts";
import type { Database } from "./db/index.ts";
import type { RuntimeHosts } from "./host-client.ts";

/** Everything the control-plane app is given; it owns no process-level state itself. */
export interface Deps {
  db: Database;
  keys: SigningKeys;
  publicKeys: PublicKeys;
  /**
   * Where `keys` can be changed (`runlet keys rotate`, `retire`): the Node control plane's
   * `RUNLET_HOME/keys/`. Unset on Workers, whose keys are secrets (docs/deploy.md).
   */
  keyStore?: KeyStore;
  /** Called after the keys changed (Node: renews the local owner's token in local.json). */
  onKeysChanged?: () => Promise<void>;
  /** Keys for page tokens and secrets at rest, derived from the control plane's master key. */
  derived: DerivedKeys;
  /** The runtime hosts of the registry (host-client.ts). */
  hosts: RuntimeHosts;
  /** Where each app version's bundle waits for the hosts (bundles.ts). */
  bundles: BundleStore;
  /** The run API's address (`{api_url}`): the dashboard reads and cancels runs there. */
  apiUrl?: string;
  /**
   * The run API's Worker as a service binding (`RUN_API`, on Workers): the dashboard's requests
   * to `apiUrl` go to it directly. A Worker cannot fetch another Worker of the same account's
   * workers.dev (error 1042), nor one routed on its own zone (the fetch goes to the origin).
   */
  runApi?: { fetch(url: string, init?: RequestInit): Promise<Response> };
  /** The secret Runlet's own components share; `/internal/*` routes refuse calls without it. */
  internalToken?: string;
  /**
   * The secret that makes the first user (`POST /v2/init`, docs/deploy.md): BOOTSTRAP_TOKEN on
   * Workers, RUNLET_BOOTSTRAP_TOKEN on Node. Unset, no first user can be made that way.
   */
  bootstrapToken?: string;
  /** The caller's address as the platform sees it (the Node socket, or Cloudflare's header). */
  clientIp?: (c: Context) => string | undefined;
  /** Behind a proxy of the operator's (RUNLET_TRUST_PROXY=1): its X-Forwarded-Proto counts. */
  trustProxy?: boolean;
}

/** The authenticated caller and their role in the path's project. */
export interface Access {
  principal: Principal;
  /** Null: an operator not in the project, on their own membership (AccessRule.operatorOnSelf). */
  role: Role | null;
  projectId: string;
}

/** An audited request, once its caller and project are known: what the entry will say. */
export interface PendingAudit {
  action: AuditAction;
  target: AuditTarget;
  principal: Principal;
  projectId: string;
  /**
   * Other projects the same entry is written to (acts on a user's token, which works in every
   * project the user is in: each one's owners see it). Written by `auditSuccesses`.
   */
  alsoIn?: string[];
  /** Set once the route has added its success entry to a batch. */
  written: boolean;
}

export type AppEnv = {
  Variables: {
    deps: Deps;
    requestId: string;
    /** The authenticated caller (set by `signedIn` and `access()`). */
    principal: Principal;
    access: Access;
    audit: PendingAudit | undefined;
  };
};

export type Ctx = Context<AppEnv>;
