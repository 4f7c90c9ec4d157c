/**
 * The components of the run API's OpenAPI document (worker/openapi.ts): the bearer scheme, the
 * headers and parameters its operations share, and the schemas of its bodies — a run's view
 * as common/protocol/run-view.ts types it, and the `{message, code}` error.
 */
import { HEADER } from "../common/consts.ts";
import { ERROR_STATUS } from "../common/errors.ts";
import { RUN_ID_SOURCE } from "../common/ids.ts";
import { RUN_STATUSES, WEBHOOK_STATES } from "../common/protocol/runs.ts";

/** A reference to a component: `ref("schemas", "Run")`. */
export const ref = (kind: string, name: string) => ({ $ref: `#/components/${kind}/${name}` });

export const json = (schema: object) => ({ "application/json": { schema } });

export const query = (name: string, description: string, schema: object = { type: "string" }) => ({
  name,
  in: "query",
  required: false,
  description,
  schema,
});

const path = (name: string, description: string, schema: object = { type: "string" }) => ({
  name,
  in: "path",
  required: true,
  description,
  schema,
});
const header = (name: string, description: string) => ({
  name,
  in: "header",
  required: false,
  description,
  schema: { type: "string" },
});

/** A run as `GET …/runs/{run_id}` shows it: `RunView` of common/protocol/run-view.ts. */
const runView = {
  type: "object",
  required: [
    "run_id",
    "project",
    "app",
    "function",
    "async",
    "status",
    "created_at",
    "started_at",
    "finished_at",
    "run_time_ms",
    "host",
  ],
  properties: {
    run_id: ref("schemas", "RunId"),
    project: { type: "string", examples: ["prj_…"] },
    app: { type: "string" },
    function: { type: "string", description: "The export, or a custom app's `METHOD /path`." },
    async: { type: "boolean" },
    status: { type: "string", enum: RUN_STATUSES },
    created_at: { type: "string", format: "date-time" },
    started_at: { type: ["string", "null"], format: "date-time" },
    finished_at: { type: ["string", "null"], format: "date-time" },
    run_time_ms: { type: ["number", "null"] },
    host: { type: ["string", "null"], description: "The registry id of its runtime host." },
    status_code: {
      type: "integer",
      description:
        "A custom app's run that ended with its answer: that answer's status; a sync function call whose result set its own status_code: that status.",
    },
    error: { type: "object", required: ["message"], properties: { message: { type: "string" } } },
    webhook: ref("schemas", "Webhook"),
  },
};

/** One delivery of a run's outcome and its attempts: `DeliveryView`, same file. */
const delivery = {
  type: "object",
  required: ["target", "signed", "state", "attempts"],
  properties: {
    target: { type: "string", description: "Scheme, host and path (never the query)." },
    signed: { type: "boolean" },
    state: { type: "string", enum: WEBHOOK_STATES },
    attempts: {
      type: "array",
      items: {
        type: "object",
        required: ["attempt", "at", "duration_ms", "verdict"],
        properties: {
          attempt: { type: "integer" },
          at: { type: "string", format: "date-time" },
          status: { type: "integer", description: "The receiver's status, when it answered." },
          error: { type: "string", description: "Why no status: a timeout or network error." },
          duration_ms: { type: "number" },
          verdict: { type: "string", enum: ["delivered", "retry", "final"] },
        },
      },
    },
  },
};

/** A run's webhook, its latest delivery and, once sent again, the earlier ones: `WebhookView`. */
const webhook = {
  allOf: [
    ref("schemas", "Delivery"),
    {
      type: "object",
      properties: {
        delivery: { type: "integer", description: "Its number, once sent again (2, 3, …)." },
        earlier: {
          type: "array",
          description: "The deliveries before it, oldest first.",
          items: {
            allOf: [
              ref("schemas", "Delivery"),
              {
                type: "object",
                required: ["delivery"],
                properties: { delivery: { type: "integer" } },
              },
            ],
          },
        },
      },
    },
  ],
};

export const components = {
  securitySchemes: {
    bearerAuth: {
      type: "http",
      scheme: "bearer",
      bearerFormat: "JWT",
      description: "A user's or a service account's token.",
    },
  },
  headers: {
    RequestId: {
      description: "The run id (`run_` and 26 characters, sortable by time).",
      schema: ref("schemas", "RunId"),
    },
    IdempotentReplayed: {
      description: "`true` when the answer is an earlier one, kept for its `Idempotency-Key`.",
      schema: { type: "string", enum: ["true"] },
    },
  },
  parameters: {
    project: path("project", "The project's id.", { type: "string", examples: ["prj_…"] }),
    app: path("app", "The app's name."),
    function: path("function", "The export to call (managed apps)."),
    runId: path("run_id", "The run's id.", ref("schemas", "RunId")),
    async: query("async", "`true`: answer 202 `{run_id}` at once and run in the background.", {
      type: "string",
      enum: ["true", "false"],
    }),
    onlyIfQueued: query(
      "onlyIfQueued",
      "`true`: cancel the run only while it is queued; one that has started is a 409 and runs on.",
      { type: "string", enum: ["true", "false"] },
    ),
    webhookEndpoint: query(
      "webhookEndpoint",
      "POST the run's outcome to this URL (`http(s)`, URL-encoded) once it has ended.",
    ),
    webhookSecret: header(
      HEADER.webhookSecret,
      "Signs the webhook's deliveries (at most 1024 characters; never shown).",
    ),
    idempotencyKey: header(
      HEADER.idempotencyKey,
      "1–255 printable ASCII characters (or a Structured Fields string), kept 24 h for the project, app and function. The same key with the same request again answers the first run (`Idempotent-Replayed: true`) instead of starting another: an async call its 202, a sync call its kept answer.",
    ),
  },
  schemas: {
    RunId: { type: "string", pattern: `^${RUN_ID_SOURCE}$` },
    Error: {
      type: "object",
      required: ["message", "code"],
      properties: {
        message: { type: "string" },
        code: {
          type: "string",
          enum: Object.keys(ERROR_STATUS),
          description: "What went wrong, for programs: a closed list, each code with one status.",
        },
        run_id: ref("schemas", "RunId"),
      },
    },
    RunResult: {
      type: "object",
      required: ["run_id", "result", "run_time_ms"],
      properties: {
        run_id: ref("schemas", "RunId"),
        result: {
          description:
            "What the function returned, as JSON: `null` when it returned nothing (`undefined`).",
        },
        run_time_ms: { type: "number" },
      },
    },
    AcceptedRun: {
      type: "object",
      required: ["run_id"],
      additionalProperties: false,
      properties: { run_id: ref("schemas", "RunId") },
    },
    FunctionError: {
      type: "object",
      required: ["run_id", "error", "run_time_ms"],
      properties: {
        run_id: ref("schemas", "RunId"),
        error: {
          type: "object",
          required: ["message"],
          properties: { message: { type: "string" } },
        },
        run_time_ms: { type: "number" },
      },
    },
    Run: runView,
    Webhook: webhook,
    Delivery: delivery,
  },
} as const;
