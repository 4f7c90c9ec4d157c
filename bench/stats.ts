import { statfsSync } from "node:fs";
import { type Agent, request as httpRequest } from "node:http";
import { cpus, totalmem } from "node:os";
import { parseArgs } from "node:util";
/** Samples → medians and tails, and the plain tables the benchmarks print. */

export interface Summary {
  n: number;
  p50: number;
  p99: number;
}

/** Nearest-rank percentile of already sorted samples. */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

export function summarize(samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  return { n: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

/** Runs `fn` `warmup` times unmeasured, then `samples` times, timing each call in ms. */
export async function measure(
  fn: () => Promise<unknown>,
  { warmup = 20, samples = 200 } = {},
): Promise<Summary> {
  for (let i = 0; i < warmup; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return summarize(times);
}

/** A Markdown table, columns padded so it also reads well in a terminal. */
export function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`;
  return [
    line(cells[0] ?? []),
    `| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`,
    ...cells.slice(1).map(line),
  ].join("\n");
}

export const ms = (value: number) => value.toFixed(value < 10 ? 2 : 1);

/**
 * A benchmark's command line: `--help` (prints `help` and exits), `--json`, and positive
 * integer options with their defaults (exits 2 naming them when one is not).
 */
export function countOptions<K extends string>(
  name: string,
  help: string,
  counts: Record<K, number>,
): Record<K, number> & { json: boolean } {
  const { values } = parseArgs({
    options: {
      ...Object.fromEntries(
        Object.entries(counts).map(([key, value]) => [
          key,
          { type: "string", default: String(value) },
        ]),
      ),
      json: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(help);
    process.exit(0);
  }
  const given = values as Record<string, string | boolean | undefined>;
  const parsed = Object.fromEntries(
    Object.keys(counts).map((key) => [key, Number(given[key])]),
  ) as Record<K, number>;
  if (!Object.values<number>(parsed).every((n) => Number.isInteger(n) && n > 0)) {
    const flags = Object.keys(counts).map((key) => `--${key}`);
    console.error(`${name}: ${flags.join(", ")} must be positive integers`);
    process.exit(2);
  }
  return { ...parsed, json: values.json === true };
}

/** The machine a benchmark ran on, for its output and the docs. */
export function machineInfo() {
  return {
    cpus: cpus().length,
    cpu: cpus()[0]?.model ?? "unknown",
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    date: new Date().toISOString().slice(0, 10),
  };
}

/** Names of file systems by their `statfs` magic number (Linux). */
const FILE_SYSTEMS: Record<number, string> = {
  61267: "ext4",
  16914836: "tmpfs",
  1481003842: "xfs",
  2435016766: "btrfs",
  2035054128: "overlayfs",
};

/** The file system `path` lives on, by name where known. */
export function fileSystemOf(path: string): string {
  const { type } = statfsSync(path);
  return FILE_SYSTEMS[type] ?? `type 0x${type.toString(16)}`;
}

export function describeMachine(m: ReturnType<typeof machineInfo>): string {
  return `${m.cpus} × ${m.cpu}, ${m.memoryGiB} GiB, Node ${m.node}, ${m.date}`;
}

/**
 * A lean keep-alive HTTP client over `agent`: what a benchmark measures is the server, not the
 * client. Answers the status and the body as text.
 */
export function requester(agent: Agent) {
  return (
    url: string,
    init: { method: string; headers?: Record<string, string>; body?: string },
  ): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const req = httpRequest(url, { method: init.method, agent, headers: init.headers }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => {
          body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on("error", reject);
      req.end(init.body);
    });
}
