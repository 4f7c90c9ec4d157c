// The run API's OpenAPI document (worker/openapi.ts) against the Worker's real answers to a
// function call: each status has its response (or `default`), a body its schema, and a status
// without a body no content — what a client generated from the document relies on. A function
// chooses its status with `status_code`, so a 404 or a 418 may be its result.
import { SELF } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openApiDocument } from "./openapi.ts";
import {
  appIsDeployed,
  expectUpstreamsUsed,
  hostAnswers,
  PROJECT,
  setUpUpstreams,
  sign,
} from "./routes/test-support.ts";

beforeAll(setUpUpstreams);
afterEach(expectUpstreamsUsed);

type Schema = { $ref?: string; oneOf?: Schema[]; required?: string[] };
type Response = { content?: Record<string, { schema: Schema }> };
const doc = JSON.parse(JSON.stringify(openApiDocument));
const runFunction = doc.paths["/v4/{project}/{app}/{function}"].post as {
  responses: Record<string, Response>;
};
const cancelRun = doc.paths["/v4/{project}/{app}/runs/{run_id}"].delete as {
  responses: Record<string, Response>;
};

/** Whether `body` has what `schema` requires (its `$ref`s followed, one of its `oneOf`). */
function admits(schema: Schema, body: Record<string, unknown>): boolean {
  if (schema.$ref) {
    const path = schema.$ref.replace(/^#\//, "").split("/");
    return admits(
      path.reduce((at, key) => at[key], doc),
      body,
    );
  }
  if (schema.oneOf) return schema.oneOf.filter((s) => admits(s, body)).length === 1;
  return (schema.required ?? []).every((key) => key in body);
}

/** Why the document does not describe this answer, or undefined when it does. */
function undescribed(status: number, text: string): string | undefined {
  const response = runFunction.responses[status] ?? runFunction.responses.default;
  if (!response) return `no response for ${status}`;
  const schema = response.content?.["application/json"]?.schema;
  if (text === "") return status === 204 && schema ? `${status} has content` : undefined;
  if (!schema) return `${status} has no content, but a body came`;
  return admits(schema, JSON.parse(text)) ? undefined : `${status}: ${text} is not its schema`;
}

describe("the run API's OpenAPI document, against the answers to a function call", () => {
  it("describes a result's own status_code, with and without a body, a throw and a refusal", async () => {
    const token = await sign();
    const headers = { authorization: `Bearer ${token}` };
    const answers: Array<[number, string]> = [];
    const results = [200, 201, 204, 400, 404, 418, 500, 503].map((status_code) => ({
      ok: true,
      result: { status_code },
      run_time_ms: 1,
    }));
    // The Worker keeps the app it resolved for the token (10 s): one answer serves every call.
    appIsDeployed();
    for (const outcome of [...results, { ok: false, error: { message: "boom" }, run_time_ms: 1 }]) {
      hostAnswers(200, outcome, "fn");
      const res = await SELF.fetch(`https://api.test/v4/${PROJECT}/hello/fn`, {
        method: "POST",
        headers,
        body: "{}",
      });
      answers.push([res.status, await res.text()]);
    }
    const deeper = await SELF.fetch(`https://api.test/v4/${PROJECT}/hello/fn/more`, {
      method: "POST",
      headers,
    });
    answers.push([deeper.status, await deeper.text()]);
    expect(answers.map(([status]) => status)).toEqual([
      200, 201, 204, 400, 404, 418, 500, 503, 500, 405,
    ]);
    expect(answers.map(([status, text]) => undescribed(status, text)).filter(Boolean)).toEqual([]);
  });
});

describe("the run API's OpenAPI document, against the answers to a cancel", () => {
  it("has the 400 of a cancel's bad or unknown query parameter", async () => {
    // The Worker answered it (a typo of onlyIfQueued once cancelled a running run), but the
    // document listed no 400 for DELETE: a generated client had no type for it.
    const headers = { authorization: `Bearer ${await sign()}` };
    appIsDeployed();
    const statuses: number[] = [];
    for (const query of ["onlyIfQueud=true", "onlyIfQueued=yes"]) {
      const res = await SELF.fetch(
        `https://api.test/v4/${PROJECT}/hello/runs/run_01m8exzrw0hp72r0q57d77nkm3?${query}`,
        { method: "DELETE", headers },
      );
      statuses.push(res.status);
      await res.body?.cancel();
    }
    expect(statuses).toEqual([400, 400]);
    expect(cancelRun.responses[400]?.content?.["application/json"]?.schema).toBeDefined();
  });
});
