/**
 * A run's values too large for one value of the shard's SQLite database (a Durable Object's
 * holds at most 2 MB): an async run's body until it starts, a delivery's body while it is sent,
 * the sealed copy kept for redeliveries, a sync run's answer kept for its idempotency key. They are kept here in 1 MiB parts, beside their run.
 * Which runs have parts is known in memory, so a run without any costs no query.
 */
import { concatBytes } from "../../common/bytes.ts";
import { MAX_VALUE_BYTES } from "./limits.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS run_parts (
  run_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  part INTEGER NOT NULL,
  bytes BLOB NOT NULL,
  PRIMARY KEY (run_id, kind, part)
);
`;

const PART_BYTES = 1024 * 1024;

export type PartKind = "payload" | "body" | "sealed" | "answer";

/** Whether a value goes in parts rather than in its column. */
export const inParts = (bytes: { byteLength: number }) => bytes.byteLength > MAX_VALUE_BYTES;

export class RunParts {
  /** Runs with parts here. */
  readonly #runs = new Set<string>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec(SCHEMA);
    for (const { run_id } of sql.exec<{ run_id: string }>("SELECT DISTINCT run_id FROM run_parts"))
      this.#runs.add(run_id);
  }

  put(runId: string, kind: PartKind, bytes: Uint8Array): void {
    this.drop(runId, kind);
    for (let at = 0, part = 0; at < bytes.byteLength; at += PART_BYTES, part++)
      this.sql.exec(
        "INSERT INTO run_parts (run_id, kind, part, bytes) VALUES (?, ?, ?, ?)",
        runId,
        kind,
        part,
        bytes.slice(at, at + PART_BYTES),
      );
    this.#runs.add(runId);
  }

  get(runId: string, kind: PartKind): ArrayBuffer | undefined {
    if (!this.#runs.has(runId)) return undefined;
    const parts = this.sql
      .exec<{ bytes: ArrayBuffer }>(
        "SELECT bytes FROM run_parts WHERE run_id = ? AND kind = ? ORDER BY part",
        runId,
        kind,
      )
      .toArray();
    if (parts.length === 0) return undefined;
    return concatBytes(parts.map((p) => new Uint8Array(p.bytes))).buffer;
  }

  /** Drops the run's parts of `kind` (all of them without one). */
  drop(runId: string, kind?: PartKind): void {
    if (!this.#runs.has(runId)) return;
    if (kind) this.sql.exec("DELETE FROM run_parts WHERE run_id = ? AND kind = ?", runId, kind);
    else this.sql.exec("DELETE FROM run_parts WHERE run_id = ?", runId);
    const left = this.sql
      .exec<{ n: number }>("SELECT count(*) AS n FROM run_parts WHERE run_id = ?", runId)
      .one().n;
    if (left === 0) this.#runs.delete(runId);
  }
}
