/**
 * Project secrets at rest: AES-256-GCM with the control plane's derived key, a random 12-byte
 * IV per write, and `{projectId}/{name}` as additional data, so a sealed value copied to another
 * row does not open. Stored as base64 of IV + ciphertext. WebCrypto only (Node and Workers).
 */
import { and, eq, type SQL, sql } from "drizzle-orm";
import { base64urlDecode, base64urlEncode } from "../common/jwt.ts";
import type { Database } from "./db/index.ts";
import { projects, secrets } from "./db/schema.ts";
import type { RuntimeHosts } from "./host-client.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const aad = (projectId: string, name: string) => encoder.encode(`${projectId}/${name}`);

export async function sealSecret(
  key: CryptoKey,
  projectId: string,
  name: string,
  value: string,
): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(
    await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: aad(projectId, name) },
      key,
      encoder.encode(value),
    ),
  );
  const out = new Uint8Array(iv.byteLength + sealed.byteLength);
  out.set(iv);
  out.set(sealed, iv.byteLength);
  return base64urlEncode(out);
}

export async function openSecret(
  key: CryptoKey,
  projectId: string,
  name: string,
  sealed: string,
): Promise<string> {
  const bytes = base64urlDecode(sealed);
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: bytes.slice(0, 12), additionalData: aad(projectId, name) },
    key,
    bytes.slice(12),
  );
  return decoder.decode(plain);
}

/**
 * What a project's secrets may take in all of an app's environment: a replica's process is
 * started with them, and Linux refuses to start a program whose environment and arguments pass
 * 2 MiB ("Argument list too long": 120 secrets of 60 KiB stopped every custom-runtime app of the
 * project from starting). Each secret counts its name, its value and 10 bytes (`=`, the ending
 * NUL, and its pointer).
 */
export const MAX_SECRETS_BYTES = 1024 * 1024;

/** A secret's count towards MAX_SECRETS_BYTES, from its name and its value. */
export const secretBytes = (name: string, value: string) =>
  encoder.encode(name).byteLength + encoder.encode(value).byteLength + 10;

/**
 * SQL, an aggregate over `secrets` rows: their count towards MAX_SECRETS_BYTES, from the sealed
 * values without opening them (base64url, unpadded, of a 12-byte IV, the value, GCM's 16-byte tag).
 */
export const sealedBytes = sql<number>`coalesce(sum(length(${secrets.name}) + length(${secrets.sealed}) * 3 / 4 - 28 + 10), 0)`;

/**
 * SQL, a condition on the `secrets` table as a statement finds it: a project's secrets still fit
 * MAX_SECRETS_BYTES once `name` takes `bytes`, or `name` does not grow (a project past the bound
 * from before it existed may still shrink a secret). Put in the write itself (`insertIf`), the
 * check and the write are one step: two writes at once cannot both pass a check made before.
 */
export function secretsFit(projectId: string, name: string, bytes: number) {
  const of = (same: boolean) =>
    sql`(select ${sealedBytes} from ${secrets} where ${secrets.projectId} = ${projectId} and ${secrets.name} ${same ? sql`=` : sql`<>`} ${name})`;
  return sql`(${of(false)} + ${bytes} <= ${MAX_SECRETS_BYTES} or ${bytes} <= ${of(true)})`;
}

/**
 * The write that raises the project's secrets revision, for the batch that changes a secret
 * (written only where `when` holds, as that change is): the runtime hosts hear the new revision
 * (`tellHosts`, and their heartbeats' answers) and replace the replicas that read the values
 * before.
 */
export const raiseSecretsRevision = (db: Database, projectId: string, when?: SQL) =>
  db
    .update(projects)
    .set({ secretsRevision: sql`${projects.secretsRevision} + 1` })
    .where(and(eq(projects.id, projectId), when))
    .returning({ revision: projects.secretsRevision });

/**
 * What keeps a write of `value` to the secret `name` from raising the revision: the stored value
 * is `value` already (and its sealed text is still the one read here). A script that sets every
 * secret on each run, unchanged, replaced every replica of the project each time. Undefined: the
 * write changes the value (or makes the secret).
 */
export async function sameValue(
  db: Database,
  key: CryptoKey,
  projectId: string,
  name: string,
  value: string,
): Promise<SQL | undefined> {
  const where = and(eq(secrets.projectId, projectId), eq(secrets.name, name));
  const [stored] = await db.select({ sealed: secrets.sealed }).from(secrets).where(where);
  if (!stored) return undefined;
  const opened = await openSecret(key, projectId, name, stored.sealed).catch(() => undefined);
  if (opened !== value) return undefined;
  return sql`exists (select 1 from ${secrets} where ${and(where, eq(secrets.sealed, stored.sealed))})`;
}

/**
 * Tells the runtime hosts the revision `raiseSecretsRevision` returned (none: nothing changed);
 * the ones that answer have replaced the project's replicas when it resolves (docs/api.md).
 */
export async function tellHosts(
  hosts: Pick<RuntimeHosts, "secretsChanged">,
  project: string,
  revised: unknown[] | undefined,
): Promise<void> {
  const [row] = (revised ?? []) as Array<{ revision: number }>;
  if (row) await hosts.secretsChanged({ project, revision: row.revision });
}
