import { expect, it } from "vitest";
import { packagesNote } from "./deploy.ts";

it("says at deploy that a Python app's requirements.txt is not installed, and what to do", () => {
  const note = packagesNote(["runlet.toml", "server.py", "requirements.txt"]);
  expect(note).toMatch(/^Note: requirements.txt is uploaded but not installed/);
  expect(note).toMatch(/pip install -r requirements.txt --target vendor/);
  expect(packagesNote(["pyproject.toml", "Pipfile"])).toMatch(/pyproject.toml, Pipfile are/);
  // Only the bundle's top folder: a package's own files inside a vendored folder are not lists.
  expect(packagesNote(["runlet.toml", "server.py", "vendor/pkg/setup.py"])).toBeUndefined();
});
