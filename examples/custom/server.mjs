/**
 * GET {api_url}/v4/{project}/hello-http/hello?name=Ada (or /?name=Ada: what `runlet deploy` prints)
 * → 200 {"greeting": "Hello, Ada!", "runId": "run_…"}
 *
 * Runlet forwards the request as it came (method, path below the app's name, query, headers,
 * body) and gives the run id as `X-Runlet-Run-Id`.
 */
import { createServer } from "node:http";

const port = Number(process.env.PORT ?? 8000);

const server = createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://app");
  if (req.method === "GET" && url.pathname === "/health") {
    res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
    return;
  }
  if (req.method === "GET" && (url.pathname === "/hello" || url.pathname === "/")) {
    const name = url.searchParams.get("name") || "world";
    const body = { greeting: `Hello, ${name}!`, runId: req.headers["x-runlet-run-id"] };
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
    return;
  }
  res.writeHead(404, { "content-type": "application/json" }).end('{"message":"not found"}');
});

server.listen(port, "127.0.0.1", () => console.log(`listening on ${port}`));
