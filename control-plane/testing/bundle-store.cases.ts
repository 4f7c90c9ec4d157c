/**
 * What a bundle store does (control-plane/bundles.ts), the same on Node's files
 * (bundles-file.test.ts) and in an R2 bucket inside workerd (bundles-r2.d1.test.ts): hosts read
 * back exactly what a deploy kept, and a delete or a replaced version leaves nothing behind, of
 * that app only.
 */
import { describe, expect, it } from "vitest";
import type { DeployRequest } from "../../common/protocol/deploy.ts";
import type { BundleStore } from "../bundles.ts";

const bundle = (version: number, path = "main.mjs"): DeployRequest => ({
  version,
  config: { name: "app", runtime: "managed" } as DeployRequest["config"],
  files: [{ path, contentBase64: btoa("export const run = () => 'hi';\n"), executable: false }],
});

/** `open` gives a store over an empty root; `many` bundles of one app are removed at once. */
export function bundleStoreCases(name: string, open: () => Promise<BundleStore>, many = 1_005) {
  describe(`bundle store: ${name}`, () => {
    it("gives back the JSON a deploy kept, and nothing for a version never kept", async () => {
      const store = await open();
      const key = { project: "prj_a", app: "hello", version: 3 };
      const kept = bundle(3, "données/é — 😀.txt");
      await store.put(key, kept);
      const text = await store.get(key);
      expect(text).toBe(JSON.stringify(kept));
      expect(JSON.parse(text ?? "")).toEqual(kept);
      expect(await store.get({ ...key, version: 4 })).toBeUndefined();
      expect(await store.get({ ...key, app: "other" })).toBeUndefined();
    });

    it("forgets one version, and a version it never kept without complaint", async () => {
      const store = await open();
      const v1 = { project: "prj_b", app: "hello", version: 1 };
      const v2 = { ...v1, version: 2 };
      await store.put(v1, bundle(1));
      await store.put(v2, bundle(2));
      await store.forget(v1);
      await store.forget({ ...v1, version: 9 });
      expect(await store.get(v1)).toBeUndefined();
      expect(await store.get(v2)).toBe(JSON.stringify(bundle(2)));
    });

    it("forgets every bundle of an app's versions up to one, whatever digest names them", async () => {
      const store = await open();
      const at = (app: string, version: number, digest?: string) => ({
        project: "prj_f",
        app,
        version,
        digest,
      });
      const gone = [
        at("hello", 1),
        at("hello", 1, "aa01"),
        at("hello", 1, "bb02"),
        at("hello", 2, "cc03"),
      ];
      const stay = [
        at("hello", 3, "dd04"),
        at("hello", 10, "ee05"),
        at("hello", 12),
        at("hell", 1, "aa01"),
      ];
      for (const key of [...gone, ...stay]) await store.put(key, bundle(key.version));
      await store.forgetUpTo("prj_f", "hello", 2);
      await store.forgetUpTo("prj_f", "never-deployed", 2);
      for (const key of gone) expect(await store.get(key), JSON.stringify(key)).toBeUndefined();
      for (const key of stay) {
        expect(await store.get(key), JSON.stringify(key)).toBe(JSON.stringify(bundle(key.version)));
      }
    });

    it("removes every version of one app, not an app whose name begins with it", async () => {
      const store = await open();
      for (const version of [1, 2, 3]) {
        await store.put({ project: "prj_c", app: "hello", version }, bundle(version));
      }
      const others = [
        { project: "prj_c", app: "hello-http", version: 1 },
        { project: "prj_c", app: "hell", version: 1 },
        { project: "prj_d", app: "hello", version: 1 },
      ];
      for (const key of others) await store.put(key, bundle(1));
      await store.remove("prj_c", "hello");
      await store.remove("prj_c", "never-deployed");
      for (const version of [1, 2, 3]) {
        expect(await store.get({ project: "prj_c", app: "hello", version })).toBeUndefined();
      }
      for (const key of others) expect(await store.get(key)).toBe(JSON.stringify(bundle(1)));
    });

    it(`removes an app's ${many} bundles, more than one listing gives`, async () => {
      const store = await open();
      const keys = Array.from({ length: many }, (_, i) => ({
        project: "prj_e",
        app: "big",
        version: i + 1,
      }));
      for (let i = 0; i < keys.length; i += 50) {
        await Promise.all(keys.slice(i, i + 50).map((k) => store.put(k, bundle(k.version))));
      }
      await store.remove("prj_e", "big");
      for (const version of [1, 500, 1_000, many]) {
        expect(await store.get({ project: "prj_e", app: "big", version })).toBeUndefined();
      }
    }, 60_000);
  });
}
