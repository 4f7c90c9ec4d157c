/**
 * `runlet apps rollback <name> [--to N]`: makes an earlier version's code live again in one step,
 * as a new version (`POST …/apps/{name}/versions/{N}/redeploy`, docs/api.md): the version before
 * the live one unless `--to` says which. It waits as `runlet deploy` does, for a replica of it
 * to start on a runtime host, and says where it started. Also `runlet apps versions <name>`, the
 * versions to roll back to.
 */
import { KEPT_BUNDLES } from "../../control-plane/bundles.ts";
import { CliError } from "../command.ts";
import { type CliConfig, callProject, printTable } from "../config.ts";
import { sendDeploy, startedNote } from "./deploy-request.ts";

/** The version `--to` names: a whole number from 1. */
function versionOf(to: string): number {
  if (!/^[1-9][0-9]{0,8}$/.test(to))
    throw new CliError(`--to takes a version number (1, 2, …), not '${to}'`);
  return Number(to);
}

/**
 * The app's newest versions, the live one first: as many as keep their files, so any version it
 * can be rolled back to is among them.
 */
async function newest(config: CliConfig, name: string) {
  const { versions } = await callProject<{ versions: Array<{ version: number; kept: boolean }> }>(
    config,
    "GET",
    `/apps/${encodeURIComponent(name)}/versions?limit=${KEPT_BUNDLES}`,
    "reading its versions",
  );
  return versions;
}

/** The version before the live one: the second newest. */
function previous(versions: Array<{ version: number }>, name: string): number {
  const [live, before] = versions;
  if (!before)
    throw new CliError(
      `${name} has one version only (v${live?.version ?? 1}): there is no earlier one to roll back to`,
    );
  return before.version;
}

export async function rollback(
  config: CliConfig,
  name: string,
  opts: { to?: string; json: boolean; startCheck: boolean },
): Promise<number> {
  const asked = opts.to === undefined ? undefined : versionOf(opts.to);
  // Read first unless --json gave the version (it prints no progress): the progress below is said
  // of a version it can roll back to alone. `--to 99` printed "Rolling hello back…" and
  // "Starting a replica…" before the 404; such a rollback is still sent, for the control plane's
  // own words (no such version, the live one, its files no longer kept) and its audit entry.
  const versions = asked !== undefined && opts.json ? [] : await newest(config, name);
  const to = asked ?? previous(versions, name);
  const started = performance.now();
  if (!opts.json && versions.some((v, i) => i > 0 && v.version === to && v.kept)) {
    console.error(`Rolling ${name} back to version ${to}'s code (project ${config.projectId})…`);
    if (opts.startCheck)
      console.error(
        `Starting a replica of it on a runtime host before it goes live, as a deploy does…`,
      );
  }
  const app = await sendDeploy(
    config,
    `/apps/${encodeURIComponent(name)}/versions/${to}/redeploy`,
    { startCheck: opts.startCheck, what: "rollback" },
  );
  if (opts.json) {
    console.log(JSON.stringify({ ...app, rolledBackFrom: to }));
    return 0;
  }
  const ms = Math.round(performance.now() - started);
  console.log(
    `Rolled ${app.name} back to version ${to}'s code as version ${app.version} (${app.runtime} runtime) in ${ms} ms`,
  );
  console.error(startedNote(app));
  return 0;
}

interface Version {
  version: number;
  runtime: string;
  deployedBy: { id: string; name: string | null };
  createdAt: string;
  digest: string | null;
  rolledBackFrom: number | null;
  kept: boolean;
}

/**
 * `runlet apps versions <name>`: the app's versions, newest first, each with who deployed it and
 * when, and whether it can be rolled back to (`--to N`), as the dashboard's app page shows them.
 * Before, `apps rollback --to N` had no command to find N with.
 */
export async function versions(config: CliConfig, name: string, json: boolean): Promise<number> {
  const path = `/apps/${encodeURIComponent(name)}/versions`;
  const body = await callProject<{ versions: Version[] }>(
    config,
    "GET",
    path,
    "reading its versions",
  );
  if (json) {
    console.log(JSON.stringify(body));
    return 0;
  }
  const [live] = body.versions;
  printTable(
    ["VERSION", "DEPLOYED", "BY", "RUNTIME", "CODE"],
    body.versions.map((v) => [
      `v${v.version}`,
      v.createdAt,
      v.deployedBy.name ?? v.deployedBy.id,
      v.runtime,
      v === live
        ? "live"
        : v.digest !== null && v.digest === live?.digest
          ? "the live code"
          : v.kept
            ? `kept: apps rollback ${name} --to ${v.version}`
            : "not kept (deploy its folder again)",
    ]),
    `${name} has no versions`,
  );
  return 0;
}
