import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "sqlite",
  schema: "./control-plane/db/schema.ts",
  out: "./control-plane/db/migrations",
});
