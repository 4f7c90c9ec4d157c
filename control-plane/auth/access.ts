import { eq } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import type { AuditAction, AuditTarget } from "../audit/actions.ts";
import type { AppEnv, Ctx } from "../context.ts";
import type { Database } from "../db/index.ts";
import { users } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { authenticate, type Principal, type Role, roleIn } from "./tokens.ts";

export interface AccessRule {
  /** The least role the route needs: `member` lets owners in too, `caller` every role. */
  role: Role;
  /**
   * Audited routes name their action and target; refusals after authentication are recorded.
   * `successes: false` records refusals only (reading the audit log itself).
   */
  audit?: {
    action: AuditAction;
    target: (c: Ctx, projectId: string) => AuditTarget;
    successes?: boolean;
  };
  /**
   * An operator acting on their own membership (`{userId}` is theirs) passes whatever their role
   * in the project, none included: how an operator enters any project, audited there (PUT and
   * PATCH of …/users/{userId}; docs/api.md).
   */
  operatorOnSelf?: true;
  /**
   * What a role short of `role` is told, where the route also needs more than the role (an
   * operator who owns the project): "only the project owner may do this" sent a member to become
   * an owner, who was then refused as no operator.
   */
  refused?: string;
}

/**
 * Route middleware for `/v2/projects/{projectId}/...`: authenticates the caller (401), finds the
 * project (404), and checks the role (403). It runs before body and query validation, so an
 * unauthenticated request is a 401 whatever it sends, and a refused or invalid request by a known
 * caller is on the record as a failure.
 */
export function access(rule: AccessRule) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const { db, publicKeys } = c.var.deps;
    const principal = await authenticate(db, publicKeys, c.req.header("authorization"));
    c.set("principal", principal);
    const projectId = c.req.param("projectId") ?? "";
    const role = await roleIn(db, principal, projectId);
    if (rule.audit) {
      c.set("audit", {
        action: rule.audit.action,
        target: rule.audit.target(c, projectId),
        principal,
        projectId,
        written: rule.audit.successes === false,
      });
    }
    if (rule.operatorOnSelf && (await operatorOnSelf(c, principal))) {
      c.set("access", { principal, role, projectId });
      return next();
    }
    if (!role) {
      throw new ApiError(
        "forbidden",
        principal.type === "service_account"
          ? "this service account belongs to another project"
          : `you are not a member of project '${projectId}'`,
      );
    }
    if (!roleMeets(role, rule.role)) {
      throw new ApiError(
        "forbidden",
        rule.role === "owner"
          ? (rule.refused ?? ownersOnly(principal, role))
          : "this service account's role is caller: it calls the project's apps (the run API) and nothing more",
      );
    }
    c.set("access", { principal, role, projectId });
    await next();
  });
}

/**
 * An owner's route refused to a member or a caller, naming the caller's role and the way to one
 * that may: "only the project owner may do this" alone left a CI job's member token (the default
 * of `runlet tokens create`) with no word of its role or of `--role owner`.
 */
function ownersOnly(principal: Principal, role: string): string {
  const why = "only the project owner may do this";
  return principal.type === "service_account"
    ? `${why}: this service account's role is ${role} (a token that may is made with --role owner: runlet tokens create)`
    : `${why}: your role in it is ${role} (an owner may make you one: runlet users role ${principal.id} owner)`;
}

/**
 * Whether `role` passes a rule whose least role is `least`: what `access` checks, and what a page
 * asks to offer an action only to those the API would let do it.
 */
export const roleMeets = (role: string, least: Role): boolean =>
  role === "owner" || (least !== "owner" && (role === "member" || least === "caller"));

/** Route middleware for routes outside a project: authenticates the caller (401) and no more. */
export const signedIn = createMiddleware<AppEnv>(async (c, next) => {
  const { db, publicKeys } = c.var.deps;
  c.set("principal", await authenticate(db, publicKeys, c.req.header("authorization")));
  await next();
});

/** Whether `principal` runs this Runlet (docs/hosts.md). A service account never does. */
export async function isOperator(db: Database, principal: Principal): Promise<boolean> {
  if (principal.type !== "user") return false;
  const [user] = await db
    .select({ operator: users.operator })
    .from(users)
    .where(eq(users.id, principal.id));
  return user?.operator === true;
}

const callerIsOperator = (c: Ctx) => isOperator(c.var.deps.db, c.var.principal);

/** Whether `principal` is an operator and the route's `{userId}` is their own. */
const operatorOnSelf = async (c: Ctx, principal: Principal) =>
  principal.type === "user" &&
  c.req.param("userId") === principal.id &&
  (await isOperator(c.var.deps.db, principal));

/**
 * Route middleware for the installation's own routes (`/v2/hosts…`, `/v2/keys…`): a signed-in
 * operator (docs/hosts.md), refused with "only an operator of this Runlet may {what}". A service
 * account never is one: it belongs to a project.
 */
export const operatorOnlyTo = (what: string) =>
  createMiddleware<AppEnv>(async (c, next) => {
    const { db, publicKeys } = c.var.deps;
    c.set("principal", await authenticate(db, publicKeys, c.req.header("authorization")));
    if (!(await callerIsOperator(c))) {
      throw new ApiError("forbidden", `only an operator of this Runlet may ${what}`);
    }
    await next();
  });

export const operatorOnly = operatorOnlyTo("see or admit its hosts");

/**
 * Route middleware after `access()`: the caller must also be an operator, to `what` ("add
 * users"). A refusal is on the record as the route's failure.
 */
export function operatorFor(what: string) {
  return createMiddleware<AppEnv>(async (c, next) => {
    if (!(await callerIsOperator(c))) {
      throw new ApiError("forbidden", `only an operator of this Runlet may ${what}`);
    }
    await next();
  });
}

/** `operatorFor("add users")`: creating users. */
export const operatorToo = operatorFor("add users");
