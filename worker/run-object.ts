import { DurableObject } from "cloudflare:workers";
import type { Env } from "./env.ts";

/**
 * One Durable Object per run (named by run id). This first version only stores and returns a
 * run's record; the async state machine, alarm watchdog and webhook deliveries build on it
 * (issue 5).
 */
export class RunObject extends DurableObject<Env> {
  async record(state: Record<string, unknown>): Promise<void> {
    await this.ctx.storage.put("run", state);
  }

  async read(): Promise<Record<string, unknown> | null> {
    return (await this.ctx.storage.get<Record<string, unknown>>("run")) ?? null;
  }
}
