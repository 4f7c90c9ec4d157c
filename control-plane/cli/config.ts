import { ENV } from "../../common/consts.ts";
import { readLocalJson, runletHome } from "../home.ts";
import { CliError } from "./command.ts";

export interface CliConfig {
  baseUrl: string;
  apiUrl: string;
  projectId: string;
  token: string;
}

/** Credentials from the environment, else from `RUNLET_HOME/local.json` (written by `runlet start`). */
export async function loadConfig(env: NodeJS.ProcessEnv = process.env): Promise<CliConfig> {
  const local = await readLocalJson(runletHome(env));
  const config = {
    baseUrl: env[ENV.baseUrl] || local?.baseUrl,
    apiUrl: env[ENV.apiUrl] || local?.apiUrl,
    projectId: env[ENV.project] || local?.projectId,
    token: env[ENV.token] || local?.token,
  };
  const missing = Object.entries(config)
    .filter(([, v]) => !v)
    .map(([k]) => k);
  if (missing.length) {
    throw new CliError(
      `no Runlet credentials (${missing.join(", ")}): run \`npm start\` first, or set ${ENV.baseUrl}, ${ENV.apiUrl}, ${ENV.project} and ${ENV.token}`,
    );
  }
  return config as CliConfig;
}

/** Reads a JSON answer; a non-2xx becomes a CliError carrying the server's `message`. */
export async function readAnswer<T>(res: Response, what: string): Promise<T> {
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const message =
      (body as { message?: string } | undefined)?.message ?? (text.slice(0, 200) || res.statusText);
    throw new CliError(`${what} failed (${res.status}): ${message}`);
  }
  return body as T;
}

export async function request(url: string, init: RequestInit, what: string): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch {
    throw new CliError(
      `${what} failed: cannot reach ${new URL(url).origin} — is Runlet running (\`npm start\`)?`,
    );
  }
}
