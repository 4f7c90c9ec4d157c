/** The layout of `RUNLET_HOME` and the files in it that several processes share (Node only). */
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import * as z from "zod";
import { ENV } from "../common/consts.ts";
import { HOST_TOKEN_PREFIX } from "../common/protocol/hosts.ts";
import { newSecret } from "../common/same-secret.ts";

export function runletHome(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env[ENV.home] || ".runlet");
}

export const homePaths = (home: string) => ({
  database: join(home, "runlet.db"),
  localJson: join(home, "local.json"),
  internalToken: join(home, "internal-token"),
  /** The host token `runlet start`'s own runtime hosts register with (docs/hosts.md). */
  hostToken: join(home, "host-token"),
  wrangler: join(home, "wrangler"),
  logs: join(home, "logs"),
});

/**
 * Writes a file readable by its owner only, atomically (temp file + rename). A write that fails
 * (a full disk) leaves no temp file behind.
 */
export async function writePrivateFile(path: string, content: string): Promise<void> {
  try {
    await writeFile(`${path}.tmp`, content, { mode: 0o600 });
    await rename(`${path}.tmp`, path);
  } catch (err) {
    await rm(`${path}.tmp`, { force: true }).catch(() => {});
    throw err;
  }
}

/** The secret the three components use among themselves; created once per RUNLET_HOME. */
export async function loadOrCreateInternalToken(home: string): Promise<string> {
  const file = homePaths(home).internalToken;
  try {
    const token = (await readFile(file, "utf8")).trim();
    if (token.length >= 32) return token;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  await mkdir(home, { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString("base64url");
  await writePrivateFile(file, `${token}\n`);
  return token;
}

/**
 * The host token of this home's own runtime hosts, made here so the supervisor can hand it to a
 * host before the control plane first starts; the control plane adopts it (bootstrap.ts).
 */
export async function loadOrCreateHostToken(home: string): Promise<string> {
  const file = homePaths(home).hostToken;
  try {
    const token = (await readFile(file, "utf8")).trim();
    if (token.startsWith(HOST_TOKEN_PREFIX)) return token;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  await mkdir(home, { recursive: true, mode: 0o700 });
  const token = newSecret(HOST_TOKEN_PREFIX);
  await writePrivateFile(file, `${token}\n`);
  return token;
}

export const localJsonSchema = z.object({
  baseUrl: z.string().url(),
  apiUrl: z.string().url(),
  projectId: z.string().min(1),
  token: z.string().min(1),
});

export type LocalJson = z.infer<typeof localJsonSchema>;

export async function readLocalJson(home: string): Promise<LocalJson | undefined> {
  try {
    const parsed = localJsonSchema.safeParse(
      JSON.parse(await readFile(homePaths(home).localJson, "utf8")),
    );
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
