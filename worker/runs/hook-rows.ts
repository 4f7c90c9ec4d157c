/**
 * A run's webhook delivery as its row holds it (see store.ts): the target with its query, the
 * secret and the body while the delivery is open, and the first delivery's sealed copy (seal.ts)
 * once it is over, for redeliveries. Values too large for their column are in parts.
 */
import { inParts, type RunParts } from "./parts.ts";

export class HookRows {
  constructor(
    private readonly sql: SqlStorage,
    private readonly parts: RunParts,
  ) {}

  /** What a delivery attempt needs: the target with its query, the secret and the body. */
  pending(id: string): { url: string; secret: string | null; body: string } | undefined {
    const row = this.sql
      .exec<{ url: string; secret: string | null; body: string | null }>(
        `SELECT hook_url AS url, hook_secret AS secret, hook_body AS body FROM runs
         WHERE id = ? AND hook_state = 'pending'`,
        id,
      )
      .toArray()[0];
    const parted = row && row.body === null ? this.parts.get(id, "body") : undefined;
    const body = row?.body ?? (parted && new TextDecoder().decode(parted));
    return row && body !== undefined ? { ...row, body } : undefined;
  }

  setBody(id: string, body: string): void {
    const bytes = new TextEncoder().encode(body);
    if (inParts(bytes)) this.parts.put(id, "body", bytes);
    this.sql.exec("UPDATE runs SET hook_body = ? WHERE id = ?", inParts(bytes) ? null : body, id);
  }

  /**
   * The delivery is over (or never to be): the secret, the body and the target go now; the first
   * delivery's target and body stay sealed (seal.ts), for redeliveries.
   */
  close(id: string, sealed: ArrayBuffer | null = null): void {
    this.parts.drop(id, "body");
    const parted = sealed !== null && inParts(sealed);
    this.sql.exec(
      `UPDATE runs SET hook_url = NULL, hook_secret = NULL, hook_body = NULL,
         hook_sealed = coalesce(?, hook_sealed) WHERE id = ?`,
      parted ? null : sealed,
      id,
    );
    if (parted) this.parts.put(id, "sealed", new Uint8Array(sealed));
  }

  /** The sealed target and body of the run's first delivery. */
  sealed(id: string): ArrayBuffer | undefined {
    const sealed = this.sql
      .exec<{ sealed: ArrayBuffer | null }>(
        "SELECT hook_sealed AS sealed FROM runs WHERE id = ?",
        id,
      )
      .toArray()[0]?.sealed;
    return sealed ?? this.parts.get(id, "sealed");
  }

  /** A new delivery of an ended run: what its attempts need, due now. */
  reopen(id: string, delivery: { url: string; secret: string | null; body: string }): void {
    this.sql.exec(
      "UPDATE runs SET hook_url = ?, hook_secret = ? WHERE id = ?",
      delivery.url,
      delivery.secret,
      id,
    );
    this.setBody(id, delivery.body);
  }
}
