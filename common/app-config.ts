import * as z from "zod";
import {
  DEFAULT_QUEUE_TIMEOUT_S,
  MAX_GRACE_PERIOD_S,
  MAX_QUEUE_TIMEOUT_S,
  MAX_START_TIMEOUT_S,
} from "./app-limits.ts";
import { editDistance } from "./closest.ts";

const appName = z
  .string()
  .regex(
    /^[a-z][a-z0-9-]{0,62}$/,
    "must start with a lowercase letter and hold only lowercase letters, digits and dashes (at most 63)",
  );

/** The parsed `runlet.toml` of an app (README, "Writing an app"). */
export const appConfigSchema = z
  .strictObject({
    name: appName,
    runtime: z
      .enum(["managed", "custom"], {
        // `runtime = "python"` (a runtime named by its language, as elsewhere) said only which
        // two there are, not which one a Python app is.
        error: (issue) =>
          typeof issue.input === "string" && !isNearRuntime(issue.input)
            ? `must be "managed" or "custom", not ${JSON.stringify(issue.input)}: a Python app, or any HTTP server of your own, is "custom", with a [custom] entrypoint such as ["python3", "server.py"]`
            : undefined,
      })
      .default("managed"),
    response_grace_period: z.number().int().min(1).max(MAX_GRACE_PERIOD_S).default(900),
    queue_timeout: z
      .number()
      .int()
      .min(1)
      .max(MAX_QUEUE_TIMEOUT_S)
      .default(DEFAULT_QUEUE_TIMEOUT_S),
    // No default written into the config: a version that leaves it out reaches runtime hosts
    // older than the field as it did before (their schema refuses a field it does not know),
    // and has their limit, DEFAULT_START_TIMEOUT_S.
    start_timeout: z.number().int().min(1).max(MAX_START_TIMEOUT_S).optional(),
    scaling: z
      .strictObject({
        min_replicas: z.number().int().min(0).max(64).default(0),
        max_replicas: z.number().int().min(1).max(64).default(4),
        replica_concurrency: z.number().int().min(1).max(1024).default(1),
        cooldown: z.number().int().min(0).max(86_400).default(60),
      })
      .prefault({}),
    custom: z
      .strictObject({
        // Written as a string ("node server.mjs", as a Dockerfile's CMD may be) it said only
        // "Invalid input: expected array, received string".
        entrypoint: z
          .array(
            z.string().min(1),
            'must be an array: the program and its arguments, such as ["node", "server.mjs"]',
          )
          .min(1),
        port: z.number().int().min(1).max(65_535).default(8000),
        healthcheck: z.string().startsWith("/").default("/health"),
      })
      .optional(),
  })
  .superRefine((cfg, ctx) => {
    if (cfg.runtime === "custom" && !cfg.custom) {
      ctx.addIssue({
        code: "custom",
        path: ["custom"],
        message: "a custom-runtime app needs a [custom] table with an entrypoint",
      });
    }
    if (cfg.scaling.min_replicas > cfg.scaling.max_replicas) {
      ctx.addIssue({
        code: "custom",
        path: ["scaling", "min_replicas"],
        message: "must not exceed max_replicas",
      });
    }
  });

export type AppConfig = z.infer<typeof appConfigSchema>;

/**
 * Padded base64 (RFC 4648), checked in linear time: a pattern of repeated groups runs out of
 * stack on a bundle's megabytes.
 */
export function isBase64(text: string): boolean {
  return text.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(text);
}

/**
 * Why a bundle's files cannot all be written out — a path given twice, or a file where another
 * path needs a folder — or undefined.
 */
export function pathClash(paths: readonly string[]): string | undefined {
  const seen = new Set<string>();
  for (const path of paths) {
    if (seen.has(path)) return `files: '${path}' appears twice`;
    seen.add(path);
  }
  for (const path of paths) {
    const parts = path.split("/");
    for (let i = 1; i < parts.length; i++) {
      const folder = parts.slice(0, i).join("/");
      if (seen.has(folder))
        return `files: '${path}' needs '${folder}' to be a folder, and it is a file`;
    }
  }
  return undefined;
}

/** One file of an app bundle as it travels between CLI, control plane and runtime host. */
export const bundleFileSchema = z.strictObject({
  path: z
    .string()
    .min(1)
    .max(512)
    // `./main.mjs` beside `main.mjs`, or `a/./b`: one file under two names, which the host
    // would refuse at the app's first call, after the deploy.
    .refine(
      (p) => !p.startsWith("/") && !p.split(/[\\/]/).some((part) => [".", "..", ""].includes(part)),
      "must be a relative path without '.' or '..' in it",
    )
    // A name no file system takes would fail the deploy on a runtime host, after the fact.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point.
    .refine((p) => !/[\u0000-\u001f\u007f]/.test(p), "must not hold control characters")
    .refine(
      (p) => p.split(/[\\/]/).every((part) => new TextEncoder().encode(part).length <= 255),
      "each name in the path must be at most 255 bytes",
    ),
  contentBase64: z.string().refine(isBase64, "must be base64 (RFC 4648, padded)"),
  executable: z.boolean().optional(),
});

export type BundleFile = z.infer<typeof bundleFileSchema>;

/**
 * A TOML parser's error in one line, with where it is: the parser's first line alone (its other
 * lines are a code frame) named no line. Two typos of a first runlet.toml are said in their own
 * words: a string left open (`name = "typo` then a newline), which the parser blames on a control
 * character, and a word without quotes (`runtime = managed`), an "invalid value".
 */
export function describeTomlError(err: unknown): string {
  const { message, line, column, codeblock } = err as {
    message?: unknown;
    line?: unknown;
    column?: unknown;
    codeblock?: unknown;
  };
  let first = String(message)
    .split("\n")[0]
    ?.replace(/^Invalid TOML document: /, "");
  if (typeof line !== "number" || typeof column !== "number") return `${first}`;
  // The code frame's line: "2:  name = \"typo", the column counted from its text's start.
  const text = new RegExp(`^${line}: {2}(.*)$`, "m").exec(String(codeblock ?? ""))?.[1];
  if (text !== undefined) {
    const at = text.slice(column - 1);
    if (first === "control characters are not allowed in strings" && /^\r?$/.test(at))
      first = "a string is not closed before the end of its line: add its closing quote";
    else if (
      first === "invalid value" &&
      /^[A-Za-z_]/.test(at) &&
      !/^(true|false|inf|nan)\b/.test(at)
    )
      first = `invalid value: a string needs quotes (${text.slice(0, column - 1)}"${/^[\w.-]+/.exec(at)?.[0]}")`;
  }
  return `${first} (line ${line}, column ${column})`;
}

/** First line of a zod error, worded for a person: `scaling.cooldown: must be at most 86400`. */
export function describeZodError(error: z.core.$ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid input";
  const where = issue.path.length ? `${issue.path.join(".")}: ` : "";
  if (issue.code === "unrecognized_keys") {
    const names = issue.keys.map((k) => `'${k}'`).join(", ");
    return `${where}unknown field${issue.keys.length > 1 ? "s" : ""} ${names}`;
  }
  return `${where}${zodDefaultWorded(issue) ?? issue.message}`;
}

/**
 * Where a field of runlet.toml goes, by the names users bring from elsewhere (Modal's `timeout`,
 * a `[scaling]` field at the top) or mistype: an unknown field's message says it.
 */
const FIELD_HINTS: Record<string, string> = {
  timeout: "response_grace_period (seconds an async run may take)",
  startup_timeout: "start_timeout (seconds a replica may take to be ready)",
  max_duration: "response_grace_period (seconds an async run may take)",
  concurrency: "[scaling] replica_concurrency",
  max_concurrency: "[scaling] replica_concurrency",
  min_containers: "[scaling] min_replicas",
  keep_warm: "[scaling] min_replicas",
  max_containers: "[scaling] max_replicas",
  scaledown_window: "[scaling] cooldown",
  command: "[custom] entrypoint",
  cmd: "[custom] entrypoint",
  entry_point: "[custom] entrypoint",
};

/** The fields of runlet.toml, by the table they go in (`""`: the top). */
const FIELDS: Record<string, string[]> = {
  "": [
    "name",
    "runtime",
    "response_grace_period",
    "queue_timeout",
    "start_timeout",
    "scaling",
    "custom",
  ],
  scaling: ["min_replicas", "max_replicas", "replica_concurrency", "cooldown"],
  custom: ["entrypoint", "port", "healthcheck"],
};

/** What runlet.toml's field `key`, unknown in the table `table`, was most likely meant to be. */
export function meantField(table: string, key: string): string | undefined {
  const hint = FIELD_HINTS[key.toLowerCase()];
  if (hint) return hint;
  for (const [other, fields] of Object.entries(FIELDS)) {
    if (other !== table && fields.includes(key))
      return other === "" ? `${key}, at the top (before any [table])` : `[${other}] ${key}`;
  }
  const near = (FIELDS[table] ?? [])
    .map((field) => ({ field, d: editDistance(field, key.toLowerCase()) }))
    .sort((a, b) => a.d - b.d)[0];
  return near && near.d <= Math.max(1, Math.floor(near.field.length / 4)) ? near.field : undefined;
}

/** A mistyped runtime (`manged`): its message names the two, no more. */
function isNearRuntime(value: string): boolean {
  return ["managed", "custom"].some((r) => editDistance(r, value.toLowerCase()) <= 2);
}

/** A runlet.toml that does not fit its schema, in one line: an unknown field says what it meant. */
export function describeConfigError(error: z.core.$ZodError): string {
  const issue = error.issues[0];
  if (issue?.code !== "unrecognized_keys") return describeZodError(error);
  const table = issue.path.join(".");
  const named = issue.keys.map((key) => {
    const meant = meantField(table, key);
    return meant ? `'${key}' (did you mean ${meant}?)` : `'${key}'`;
  });
  const where = table ? `${table}: ` : "";
  return `${where}unknown field${named.length > 1 ? "s" : ""} ${named.join(", ")}`;
}

/** `a`, `a or b`, `a, b or c`. */
const orList = (items: string[]) =>
  items.length > 1 ? `${items.slice(0, -1).join(", ")} or ${items.at(-1)}` : (items[0] ?? "");

/**
 * Zod's own words for an issue, said as the rest of Runlet says things; undefined for an issue
 * whose words are ours (a schema's message). runlet.toml's `runtime = "manged"` read
 * `Invalid option: expected one of "managed"|"custom"`, `response_grace_period = 100000`
 * `Too big: expected number to be <=43200`, and `= "10"` `Invalid input: expected number,
 * received string`.
 */
function zodDefaultWorded(issue: z.core.$ZodIssue): string | undefined {
  if (!/^(Invalid option|Invalid input|Invalid string|Too big|Too small):/.test(issue.message))
    return undefined;
  if (issue.code === "invalid_value")
    return `must be ${orList(issue.values.map((v) => JSON.stringify(v)))}`;
  if (issue.code === "invalid_format" && issue.format === "starts_with" && "prefix" in issue)
    return `must start with ${JSON.stringify(issue.prefix)}`;
  if (issue.code === "too_big" && issue.origin === "number")
    return `must be at most ${issue.maximum}${issue.inclusive ? "" : " (exclusive)"}`;
  if (issue.code === "too_small" && issue.origin === "number")
    return `must be at least ${issue.minimum}${issue.inclusive ? "" : " (exclusive)"}`;
  if (issue.code === "too_small" && issue.origin === "string")
    return issue.minimum === 1
      ? "must not be empty"
      : `must be ${issue.minimum} characters or more`;
  if (issue.code === "invalid_type") {
    const received = /received (\w+)$/.exec(issue.message)?.[1];
    if (received === "undefined") return "is required";
    const expected = issue.expected === "int" ? "whole number" : issue.expected;
    const not = received && received !== expected ? `, not ${aOrAn(received)}` : "";
    // A whole number given as 1.5 is a number still: say which kind.
    return `must be ${aOrAn(expected)}${issue.expected === "int" && received === "number" ? "" : not}`;
  }
  return undefined;
}

const aOrAn = (noun: string) => `${/^[aeiou]/.test(noun) ? "an" : "a"} ${noun}`;

/**
 * Why a managed app's files cannot run (no main.js or main.mjs at the root), else undefined: the
 * control plane's refusal, which `runlet deploy` says before it packs and uploads anything.
 */
export function missingEntry(runtime: string, paths: readonly string[]): string | undefined {
  if (runtime !== "managed" || paths.some((p) => p === "main.js" || p === "main.mjs"))
    return undefined;
  // A main.ts alone was refused without a word of why: Runlet runs JavaScript.
  const ts = paths.some((p) => /^main\.(ts|mts|tsx)$/.test(p));
  return `a managed-runtime app needs main.js or main.mjs at its root${ts ? ": Runlet runs JavaScript, so compile main.ts to main.mjs first (npx esbuild main.ts --bundle --platform=node --format=esm --outfile=main.mjs)" : ""}`;
}
