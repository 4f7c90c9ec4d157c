/**
 * A deploy's start check (docs/api.md, "Deploys start a replica first"): before a version is
 * recorded, a runtime host starts a replica of it (hosts/start.ts). An app whose module fails
 * as it loads, or whose server exits or never gets healthy, was made current all the same, and
 * every call then failed until the next deploy. Now such a deploy is refused, 422 quoting the
 * app's error and its last output, and the version before goes on answering; with no host to
 * start it on (none up, or none that could for a reason of its own: its sandbox, the project's
 * secrets, its disk), 503 (a deploy nobody checked would go live unseen once a host is back),
 * unless the caller asks for no check (`?startCheck=false`, `runlet deploy --no-start-check`).
 */
import { z } from "@hono/zod-openapi";
import type { DeployRequest, OutputLine } from "../../common/protocol/deploy.ts";
import type { Ctx } from "../context.ts";
import { ApiError } from "../errors.ts";

export const startedSchema = z
  .object({
    host: z.string().openapi({ description: "The runtime host it started on (its id)." }),
    ms: z.number().int().openapi({ description: "How long its start took, in milliseconds." }),
    exports: z.array(z.string()).optional().openapi({
      description:
        "A managed app's functions, those its module exports, as the replica found them (absent for a custom app, and from a runtime host older than the field).",
    }),
  })
  .nullable()
  .openapi({
    description:
      "The replica of this version started before the version was recorded; it serves the version's first calls. Null when deployed with startCheck=false.",
  });

export type Started = z.infer<typeof startedSchema>;

/** Characters of the app's output a refusal quotes at most. */
const QUOTED_CHARS = 2_000;

/**
 * Starts a replica of `version` on a host: how it started, or the refusal (thrown) that says
 * why it could not. `live`: the app's version now, which stays (none for a new app). `command`:
 * the CLI's command that deploys it without the check, which a 503 names.
 */
export async function startFirst(
  c: Ctx,
  input: { project: string; app: string; version: number; digest: string; bundle: DeployRequest },
  live: number | undefined,
  command = "runlet deploy --no-start-check",
): Promise<NonNullable<Started>> {
  const { app, version } = input;
  const outcome = await c.var.deps.hosts.start(input);
  const stays = live ? `version ${live} still answers` : "the app was not created";
  if (outcome.state === "started") {
    const { host, ms, exports } = outcome;
    return { host, ms: Math.round(ms), ...(exports ? { exports } : {}) };
  }
  if (outcome.state === "failed") {
    const output = quoted(outcome.output);
    throw new ApiError(
      "unprocessable",
      `version ${version} of '${app}' was not deployed (${stays}): ${outcome.message}` +
        (output ? `\nits last output, on runtime host ${outcome.host}:\n${output}` : ""),
    );
  }
  // A host's own failure to start it (its sandbox, the secrets, its disk) is no fault of the app.
  const why =
    outcome.reasons.length === 0
      ? "no runtime host is up to start a replica of it first. Try again once one is (runlet hosts)"
      : `no runtime host could start a replica of it first (${outcome.reasons.join("; ")}). Try again once one can (runlet hosts)`;
  throw new ApiError(
    "unavailable",
    `version ${version} of '${app}' was not deployed (${stays}): ${why}, or deploy without the check (${command}, ?startCheck=false): the version is then made current whether it starts or not`,
  );
}

/** The lines as `stream | text`, indented, the last ones that fit in `QUOTED_CHARS`. */
function quoted(lines: readonly OutputLine[]): string {
  const kept: string[] = [];
  let size = 0;
  for (const { stream, text } of lines.toReversed()) {
    const line = `  ${stream} | ${text}`;
    if (size + line.length > QUOTED_CHARS && kept.length > 0) break;
    kept.unshift(line);
    size += line.length + 1;
  }
  return kept.join("\n");
}
