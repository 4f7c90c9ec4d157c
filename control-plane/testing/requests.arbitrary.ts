/**
 * Random requests to the management API, for the property that bad input is always answered
 * (control-plane/properties.test.ts): the routes as the OpenAPI document and the app's route
 * table list them, and requests to each that are mostly wrong — random path segments, query
 * strings, JSON or not JSON, tokens of every kind — and now and then right.
 */
import fc from "fast-check";

export interface Operation {
  method: string;
  /** `/v2/projects/{projectId}`: the OpenAPI form. */
  template: string;
  params: string[];
  query: string[];
  /** The 2xx statuses it documents (any 2xx for an undocumented route). */
  success: number[];
  /** Matches a decoded path. */
  pattern: RegExp;
}

export interface RandomRequest {
  method: string;
  /** Path and query, as sent. */
  target: string;
  headers: Record<string, string>;
  body?: string;
}

export type OpenApiDocument = {
  paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>>;
};
type Responses = Record<string, unknown>;

const ANY_2XX = [200, 201, 202, 204];

/** Every route: the documented ones from `doc`, the others (internal, JWKS) from `routes`. */
export function operationsOf(doc: OpenApiDocument, routes: { method: string; path: string }[]) {
  const ops = new Map<string, Operation>();
  for (const [template, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const parameters = op.parameters ?? [];
      const responses = (op as { responses?: Responses }).responses ?? {};
      ops.set(`${method.toUpperCase()} ${template}`, {
        method: method.toUpperCase(),
        template,
        params: parameters.filter((p) => p.in === "path").map((p) => p.name),
        query: parameters.filter((p) => p.in === "query").map((p) => p.name),
        success: Object.keys(responses)
          .map(Number)
          .filter((s) => s >= 200 && s < 300),
        pattern: patternOf(template),
      });
    }
  }
  for (const { method, path } of routes) {
    if (method === "ALL" || path.includes("*")) continue;
    const template = path.replace(/:(\w+)/g, "{$1}");
    const key = `${method} ${template}`;
    if (ops.has(key)) continue;
    const params = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string);
    ops.set(key, {
      method,
      template,
      params,
      query: [],
      success: ANY_2XX,
      pattern: patternOf(template),
    });
  }
  return [...ops.values()];
}

function patternOf(template: string): RegExp {
  const escaped = template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{\w+\}/g, "[^/]+");
  return new RegExp(`^${escaped}/?$`);
}

/** What a request may carry that is sometimes right: the fixture's own tokens and ids. */
export interface Known {
  /** The token that opens most routes: the project owner's; `internal` opens /internal. */
  owner: string;
  internal: string;
  /** Tokens of others: a member, an outsider, revoked, forged, … */
  others: string[];
  params: Record<string, string[]>;
}

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
/** Segments that trip decoders and routers: bad percent-encodings, dot segments, empty. */
const NASTY_SEGMENTS = ["", ..."% %zz %ff %E0%A4%A %00 .. . %2e%2e a%2Fb ~".split(" ")];
const NASTY_VALUES = ["", "0", "-1", "1e3", "201", "null", "true", "[]", "{}", "%", "\u0000"];

/** A string of any code points: ASCII, astral, control, lone surrogates. */
const anyText = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary" }),
  fc.constantFrom(...NASTY_VALUES),
  fc.constant("x".repeat(5_000)),
);

function encode(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    // A lone surrogate: sent as it is, for the URL parser to deal with.
    return value;
  }
}

/** A path segment: the fixture's own value most often (the first is the right one), else junk. */
const segment = (known: string[] = []) => {
  const [right = "x", ...others] = known;
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant(right) },
    { weight: 1, arbitrary: others.length > 0 ? fc.constantFrom(...others) : fc.constant(right) },
    { weight: 2, arbitrary: anyText.map(encode) },
    { weight: 1, arbitrary: fc.constantFrom(...NASTY_SEGMENTS) },
  );
};

const dateText = fc.oneof(
  fc
    .date({ min: new Date("1970-01-01"), max: new Date("2100-01-01"), noInvalidDate: true })
    .map((d) => d.toISOString()),
  fc.constantFrom("2026-13-01T00:00:00Z", "2026-01-01", "yesterday", "2026-01-01T00:00:00+25:00"),
);

const queryValue = fc.oneof(
  fc.constantFrom("1", "50", "200", "success", "failure", "true", "false", "queued", "hello"),
  dateText,
  fc.base64String({ maxLength: 40 }),
  anyText,
);

function queryOf(names: string[]) {
  const name = names.length > 0 ? fc.oneof(fc.constantFrom(...names), fc.string()) : fc.string();
  return fc
    .array(fc.tuple(name, queryValue, fc.boolean()), { maxLength: 5 })
    .map((pairs) =>
      pairs.length === 0
        ? ""
        : `?${pairs.map(([k, v, raw]) => (raw ? `${k}=${v}` : `${encode(k)}=${encode(v)}`)).join("&")}`,
    );
}

const b64 = (text: string) => Buffer.from(text).toString("base64");
const TOMLS = [
  'name = "hello"\nruntime = "managed"\n',
  'name = "hello"\nruntime = "custom"\n[custom]\nentrypoint = ["node", "s.js"]\nport = 8000\n',
  'name = "BAD NAME"\n',
  "name = \n",
  'name = "hello"\n[scaling]\nmax_replicas = -1\n',
];

const name = fc.oneof(fc.constantFrom("proj", "ci bot", ""), anyText);
const plan = fc.constantFrom("hobby", "pro", "enterprise", "gold");
const files = fc.array(
  fc.record({
    path: fc.constantFrom("runlet.toml", "main.mjs", "../escape", "/abs", "a/b.js", ""),
    contentBase64: fc.oneof(
      fc.constantFrom(...TOMLS).map(b64),
      fc.constant(b64("export function run() { return 1; }")),
      fc.string(),
    ),
  }),
  { minLength: 1, maxLength: 3 },
);

const role = fc.constantFrom("owner", "member", "admin");
const ms = fc.oneof(fc.nat(), fc.integer(), fc.double(), fc.constant(null));

/** A run's report from the Worker or the host: the keys of the runs index, right or wrong. */
const runReport = fc.record(
  {
    projectId: fc.oneof(fc.constant("prj_00000000000000000000000000"), fc.string()),
    app: name,
    function: name,
    async: fc.oneof(fc.boolean(), fc.jsonValue()),
    status: fc.constantFrom("queued", "running", "success", "failure", "cancelled", "nope"),
    createdAt: ms,
    finishedAt: ms,
    runTimeMs: ms,
  },
  { requiredKeys: ["projectId", "app", "function", "status"] },
);

/** The body of each route that takes one: the right keys with right or wrong values. */
const SHAPES: Record<string, fc.Arbitrary<unknown>> = {
  "POST /v2/projects": fc.record({ name, plan }, { requiredKeys: ["name"] }),
  "PATCH /v2/projects/{projectId}": fc.record({ name, plan }, { requiredKeys: [] }),
  "POST /v2/projects/{projectId}/service-accounts": fc.record(
    { name, expiresAt: dateText, role },
    { requiredKeys: ["name", "expiresAt"] },
  ),
  "PUT /v2/projects/{projectId}/secrets/{name}": fc.record({ value: anyText }),
  "POST /v2/projects/{projectId}/apps": fc.record({ files }),
  "POST /internal/runs": fc.record({ runs: fc.array(runReport, { maxLength: 3 }) }),
  "PUT /internal/runs/{runId}": runReport,
};

/** A body of some route's shape. */
const plausibleBody = fc.oneof(...Object.values(SHAPES)).map((b) => JSON.stringify(b));

/** A body of the route's own shape, its values right or wrong. */
function bodyFor(op: Operation): fc.Arbitrary<string> {
  const shape = SHAPES[`${op.method} ${op.template}`];
  return shape ? shape.map((b) => JSON.stringify(b)) : plausibleBody;
}

const body = fc.oneof(
  { weight: 3, arbitrary: plausibleBody },
  { weight: 3, arbitrary: fc.jsonValue().map((v) => JSON.stringify(v) ?? "null") },
  { weight: 1, arbitrary: anyText },
  { weight: 1, arbitrary: fc.constantFrom("{", '{"name":', "[1,2", "\uFEFF{}", "") },
);

const contentType = fc.constantFrom(
  "application/json",
  "application/json; charset=utf-8",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  undefined,
);

function headersOf(known: Known, right: string) {
  const authorization = fc.oneof(
    { weight: 4, arbitrary: fc.constant(`Bearer ${right}`) },
    {
      weight: 3,
      arbitrary: fc
        .constantFrom(...known.others, known.owner, known.internal)
        .map((t) => `Bearer ${t}`),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(undefined, "Bearer", "Bearer ", "Basic dTpw", "bearer x.y.z"),
    },
    { weight: 1, arbitrary: fc.string().map((s) => `Bearer ${s}`) },
  );
  return fc.record({ authorization, contentType }).map(({ authorization, contentType }) => {
    const headers: Record<string, string> = { "user-agent": "runlet-properties" };
    // Header values must be ByteStrings without CR/LF: anything else never reaches a server.
    if (authorization !== undefined && /^[\x20-\x7e]*$/.test(authorization))
      headers.authorization = authorization;
    if (contentType !== undefined) headers["content-type"] = contentType;
    return headers;
  });
}

const withBody = (method: string) => method !== "GET" && method !== "HEAD";

/** Requests aimed at `op`: its method mostly, its path with right or wrong parameters. */
export function requestsTo(op: Operation, known: Known): fc.Arbitrary<RandomRequest> {
  const params = fc.tuple(...op.params.map((name) => segment(known.params[name])));
  return fc
    .record({
      method: fc.oneof(
        { weight: 4, arbitrary: fc.constant(op.method) },
        fc.constantFrom(...METHODS),
      ),
      params,
      query: queryOf(op.query),
      headers: headersOf(
        known,
        op.template.startsWith("/internal/") ? known.internal : known.owner,
      ),
      body: fc.oneof({ weight: 2, arbitrary: bodyFor(op) }, body),
    })
    .map(({ method, params, query, headers, body }) => {
      let i = 0;
      const path = op.template.replace(/\{\w+\}/g, () => params[i++] ?? "");
      return {
        method,
        target: `${path}${query}`,
        headers,
        body: withBody(method) ? body : undefined,
      };
    });
}

/** Requests to any path: under /v2, /internal or nowhere in particular. */
export function anyRequest(known: Known): fc.Arbitrary<RandomRequest> {
  const prefix = fc.constantFrom("/v2", "/v2/projects", "/internal", "", "/v1", "/.well-known");
  return fc
    .record({
      method: fc.oneof(fc.constantFrom(...METHODS), fc.constantFrom("TRACE", "PROPFIND", "get")),
      prefix,
      segments: fc.array(segment(Object.values(known.params).flat()), { maxLength: 5 }),
      query: queryOf([]),
      headers: headersOf(known, known.owner),
      body,
    })
    .map(({ method, prefix, segments, query, headers, body }) => ({
      method,
      target: `${prefix}/${segments.join("/")}${query}`,
      headers,
      body: withBody(method.toUpperCase()) ? body : undefined,
    }));
}
