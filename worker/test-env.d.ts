// Types of the `cloudflare:test` module inside the workers vitest project.
/// <reference types="@cloudflare/vitest-pool-workers" />
import type { Env } from "./env.ts";

declare module "cloudflare:test" {
  interface ProvidedEnv extends Env {}
}
