import { expect, it } from "vitest";
import { loadEnv } from "./launch.ts";

it("gives a spare the app's secrets, but none over a variable the host sets", () => {
  const spec = { project: "p", app: "a", version: 3, dir: "/app" };
  const secrets = {
    API_KEY: "k",
    NODE_ENV: "development",
    PATH: "/evil",
    HOME: "/elsewhere",
    RUNLET_APP: "other",
    RUNLET_FOO: "passes",
  };
  expect(loadEnv(spec, secrets)).toEqual({
    API_KEY: "k",
    RUNLET_FOO: "passes",
    RUNLET_PROJECT: "p",
    RUNLET_APP: "a",
    RUNLET_VERSION: "3",
  });
});

it("keeps a custom app's PATH, HOME, PWD and NODE_ENV the host's, whatever its secrets say", async () => {
  const { managedEnv } = await import("./launch.ts");
  const spec = { project: "p", app: "a", version: 1, dir: "/app" };
  const env = managedEnv(spec, "/app", { PWD: "/elsewhere", NODE_ENV: "dev", API_KEY: "k" });
  expect(env).toMatchObject({ HOME: "/app", NODE_ENV: "production", API_KEY: "k" });
  expect(env.PWD).toBeUndefined(); // the launch script's shell sets it, in /app
});
