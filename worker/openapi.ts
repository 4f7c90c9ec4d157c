/**
 * `GET /v4/openapi.json`: the run API as OpenAPI 3.1, a plain object (no schema library in the
 * Worker's bundle). worker/openapi.test.ts holds it to the routes `index.ts` serves. Its style is
 * the management API's (`/v2/openapi.json`, control-plane/openapi.ts): the `bearerAuth` scheme,
 * the `{message, code}` error, an operationId and a 401 on every operation.
 *
 * One path item, `/v4/{project}/{app}/{function}`, stands for two routes: `POST` runs a managed
 * app's function, and every method is a custom app's request. OpenAPI cannot template a path
 * of several segments, and two templates of one shape are the same path to it.
 */
import type { Context } from "hono";
import { HEADER } from "../common/consts.ts";
import { components, json, query, ref } from "./openapi-components.ts";

export const OPENAPI_PATH = "/v4/openapi.json";

const REQUEST_ID = { [HEADER.requestId]: ref("headers", "RequestId") };
const REPLAYED = {
  ...REQUEST_ID,
  [HEADER.idempotentReplayed]: ref("headers", "IdempotentReplayed"),
};
const error = (description: string) => ({
  description,
  headers: REQUEST_ID,
  content: json(ref("schemas", "Error")),
});
const answer = (description: string, schema: object, headers: object = REQUEST_ID) => ({
  description,
  headers,
  content: json(schema),
});

/** The refusals every `/v4/{project}/{app}/…` route shares: they come from its middleware. */
const REFUSED = {
  401: error("The Authorization header is missing, or the token is invalid or expired."),
  403: error("The token is of another project, or its user is not a member of the project."),
  404: error("No such project or app (or, for a run, no such run of the app)."),
  502: error("The control plane or the runtime host is unreachable."),
};

/** What every run call (managed or custom) may answer besides its own outcome. */
const RUN_CALL_REFUSED = {
  400: error(
    "Invalid JSON body, `async` other than true/false, a bad `webhookEndpoint`, `X-Webhook-Secret` or `Idempotency-Key`, a WebSocket handshake, (managed apps) another query parameter, named, or (custom apps) a header value with a control character.",
  ),
  ...REFUSED,
  409: error("The run of this `Idempotency-Key` has not answered yet (sync runs)."),
  413: error("The body is larger than 10 MiB."),
  422: error("This `Idempotency-Key` was used with a different request: use a new key."),
  429: error(
    "Sync: no replica slot within 30 s, or 10,000 calls already waiting; async: the app's queue is full.",
  ),
  503: error(
    "Async: the run store could not record the run, so it was not accepted (or, when the store did not answer, may not have been: the message says which); submit it again.",
  ),
  504: error("The call exceeded the synchronous limit."),
  507: error(
    "Async: the run store is full (its disk, locally), so the run was not accepted; free space, then submit it again.",
  ),
};

const ACCEPTED = answer(
  "`async=true`: the run is recorded in the app's queue; exactly `{run_id}`.",
  ref("schemas", "AcceptedRun"),
  REPLAYED,
);

const RUN_CALL_PARAMETERS = [
  ref("parameters", "project"),
  ref("parameters", "app"),
  ref("parameters", "async"),
  ref("parameters", "webhookEndpoint"),
  ref("parameters", "webhookSecret"),
  ref("parameters", "idempotencyKey"),
];

const RUN_PARAMETERS = [
  ref("parameters", "project"),
  ref("parameters", "app"),
  ref("parameters", "runId"),
];

/** A custom app's request, forwarded as it came: one operation per method. */
function customAppOperation(method: string) {
  return {
    operationId: `callCustomApp${method[0]?.toUpperCase()}${method.slice(1)}`,
    summary: `${method.toUpperCase()} a custom app's path`,
    description:
      "A custom-runtime app takes any method and any path below `/v4/{project}/{app}/`, of any depth (`function` stands for the path here). The request — method, path, query, headers, body — is forwarded to a replica and its answer comes back unchanged, with `X-Request-Id`. Runlet's own parameters (`async`, `webhookEndpoint`, `X-Webhook-Secret`, `Authorization`) are not forwarded. On a managed app, any method but POST is a 405 with `Allow: POST`, and a method a run's own path does not take (`runs/{run_id}`, `…/deliveries`) a 405 whose `Allow` lists those it takes; on a custom app both are the app's own requests.",
    tags: ["custom apps"],
    security: [{ bearerAuth: [] }],
    parameters: [...RUN_CALL_PARAMETERS, ref("parameters", "function")],
    ...(method === "get" || method === "head" ? {} : { requestBody: { content: { "*/*": {} } } }),
    responses: {
      default: { description: "The app's own answer.", headers: REPLAYED },
      202: ACCEPTED,
      ...RUN_CALL_REFUSED,
      405: error(
        "The app is a managed app: it runs functions with POST only (`Allow: POST`); or, on a run's own path, the methods that path takes (`Allow: GET, HEAD, DELETE` for `runs/{run_id}`, `Allow: POST` for `…/deliveries`).",
      ),
    },
  };
}

/**
 * What a function call answers. A result's own `status_code` (200–599) is its status, so any
 * status may be a `RunResult` too: each refusal says so (`oneOf`: no body matches both),
 * `default` stands for the statuses Runlet itself never answers, and 204 has no body.
 */
function functionCallAnswers() {
  const refusals: Record<string, { description: string; schemas: object[] }> = {
    ...Object.fromEntries(
      Object.entries(RUN_CALL_REFUSED).map(([status, { description }]) => [
        status,
        { description, schemas: [ref("schemas", "Error")] },
      ]),
    ),
    405: {
      description:
        "A deeper path of a managed app (`/v4/{project}/{app}/{function}/more`), with `Allow: POST`.",
      schemas: [ref("schemas", "Error")],
    },
    500: {
      description:
        "The function threw (`{run_id, error: {message}, run_time_ms}`, no stack), or Runlet failed (`Error`).",
      schemas: [ref("schemas", "FunctionError"), ref("schemas", "Error")],
    },
  };
  const result = ref("schemas", "RunResult");
  return {
    200: answer(
      "The function returned. The status is 200, or the result's own numeric `status_code` (200–599).",
      result,
      REPLAYED,
    ),
    202: ACCEPTED,
    204: {
      description:
        "The result's own `status_code` was 204 (or 205, 304): no body; the run id is in `X-Request-Id`.",
      headers: REPLAYED,
    },
    ...Object.fromEntries(
      Object.entries(refusals).map(([status, { description, schemas }]) => [
        status,
        answer(`${description} Or the function returned a result with this \`status_code\`.`, {
          oneOf: [...schemas, result],
        }),
      ]),
    ),
    default: answer(
      "The function returned a result with its own `status_code` (200–599); no body for 205 and 304.",
      result,
      REPLAYED,
    ),
  };
}

export const openApiDocument = {
  openapi: "3.1.0",
  info: {
    title: "Runlet run API",
    version: "1.0.0",
    description:
      "Runs the functions of deployed apps, and shows, cancels and redelivers runs. Every answer about a run carries `X-Request-Id`, its run id. The management API is `{base_url}/v2/openapi.json`.",
  },
  tags: [
    { name: "runs", description: "Running functions of managed apps, and the runs themselves." },
    {
      name: "custom apps",
      description: "Requests to custom-runtime apps, forwarded as they came.",
    },
  ],
  paths: {
    "/v4/{project}/{app}/{function}": {
      post: {
        operationId: "runFunction",
        summary: "Run a function of a managed app",
        description:
          "Calls the export `function` with the JSON body as its input (empty: null), at once or, with `async=true`, in the background. A POST to a deeper path of a managed app (`/v4/{project}/{app}/{function}/more`) is a 405 with `Allow: POST` (`method_not_allowed`). On a custom app this request is forwarded to the app, as any other (see `callCustomAppGet`).",
        tags: ["runs"],
        security: [{ bearerAuth: [] }],
        parameters: [...RUN_CALL_PARAMETERS, ref("parameters", "function")],
        requestBody: { description: "The function's input.", content: json({}) },
        responses: functionCallAnswers(),
      },
      ...Object.fromEntries(
        ["get", "put", "patch", "delete", "head", "options"].map((m) => [m, customAppOperation(m)]),
      ),
    },
    "/v4/{project}/{app}/runs/{run_id}": {
      parameters: RUN_PARAMETERS,
      get: {
        operationId: "getRun",
        summary: "A run's state",
        description:
          "A run of an app deleted since is still shown while the runs index has it (with its error and webhook deliveries while its shard keeps them); another id of that app is a 404, and cancelling or redelivering its runs is a 404 as any call of the app. Another method than GET, HEAD or DELETE on this path is, on a managed app, a 405 with `Allow: GET, HEAD, DELETE` (`method_not_allowed`); on a custom app, the app's own request.",
        tags: ["runs"],
        security: [{ bearerAuth: [] }],
        responses: {
          200: answer("The run.", ref("schemas", "Run")),
          400: error("A query parameter, named: this request takes none."),
          ...REFUSED,
        },
      },
      delete: {
        operationId: "cancelRun",
        summary: "Cancel a queued or running async run",
        description:
          "It ends `cancelled` at once and no webhook is delivered. With `?onlyIfQueued=true` a run that has started is left to run (409): what `runlet cancel --app NAME --queued` sends.",
        tags: ["runs"],
        security: [{ bearerAuth: [] }],
        parameters: [ref("parameters", "onlyIfQueued")],
        responses: {
          200: answer("The run, cancelled.", ref("schemas", "Run")),
          400: error(
            "`onlyIfQueued` other than true/false, or given twice; or another query parameter, named (`?onlyIfQueud=true` would have cancelled a running run).",
          ),
          ...REFUSED,
          409: error(
            "The run has ended, or is a sync run; or it has started and `onlyIfQueued=true` was sent.",
          ),
        },
      },
    },
    "/v4/{project}/{app}/runs/{run_id}/deliveries": {
      parameters: RUN_PARAMETERS,
      post: {
        operationId: "redeliverRun",
        summary: "Deliver an ended run's outcome to its webhook again",
        description:
          "A new delivery of the first one's body and `X-Request-Id`, to the run's first target or to `webhookEndpoint`, under the same retry rules; signed when this request carries `X-Webhook-Secret` (the first one's is not kept). The run's `webhook` is then this delivery, numbered, with the earlier ones. Another method on this path is, on a managed app, a 405 with `Allow: POST` (`method_not_allowed`); on a custom app, the app's own request.",
        tags: ["runs"],
        security: [{ bearerAuth: [] }],
        parameters: [
          query(
            "webhookEndpoint",
            "Deliver to this URL (`http(s)`) instead of the run's own webhook.",
          ),
          ref("parameters", "webhookSecret"),
        ],
        responses: {
          202: answer("The delivery is under way: the run.", ref("schemas", "Run")),
          400: error(
            "A bad `webhookEndpoint` or `X-Webhook-Secret`, another query parameter (named), or a body other than none or `{}` (its fields named).",
          ),
          ...REFUSED,
          413: error("A body over 64 KiB (this request takes none)."),
          409: error(
            "A delivery of the run is in progress; or the run has not ended, had no webhook, was cancelled before it ended, or its first delivery is no longer kept.",
          ),
        },
      },
    },
  },
  components,
} as const;

/** The document, its server being the Worker that answers it (wherever it is deployed). */
export function serveOpenApi(c: Context) {
  const servers = [{ url: new URL(c.req.url).origin, description: "This Worker." }];
  return c.json({ ...openApiDocument, servers });
}
