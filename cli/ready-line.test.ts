import { expect, it } from "vitest";
import { readyLine } from "./ready-line.ts";

const TRY = `npx runlet deploy examples/hello && npx runlet run hello --data '{"name":"Ada"}'`;

it("says the first commands as they are inside the checkout, where npx runs its CLI", () => {
  expect(readyLine("/src/runlet", "/src/runlet/", "/src/runlet/.runlet")).toBe(
    `Runlet is ready. Try: ${TRY}`,
  );
});

it("goes to the checkout first from elsewhere, naming a home that is not its own", () => {
  // It said `npx runlet deploy examples/hello` in /tmp too: npx then runs the npm registry's
  // package named runlet, and there is no examples/hello there.
  expect(readyLine("/tmp/work", "/src/runlet/", "/tmp/hb-home")).toBe(
    `Runlet is ready. Try: cd /src/runlet && export RUNLET_HOME=/tmp/hb-home && ${TRY}`,
  );
  expect(readyLine("/src/runlet/examples", "/src/runlet", "/src/runlet/.runlet")).toBe(
    `Runlet is ready. Try: cd /src/runlet && ${TRY}`,
  );
  expect(readyLine("/home/ada", "/src/my runlet", "/home/ada/it's/.runlet")).toBe(
    `Runlet is ready. Try: cd '/src/my runlet' && export RUNLET_HOME='/home/ada/it'\\''s/.runlet' && ${TRY}`,
  );
});

it("names a home that is not the checkout's own inside the checkout too", () => {
  // RUNLET_HOME=/tmp/hf-home npm start said only `npx runlet deploy …`: in the README's second
  // terminal that read the checkout's .runlet (none: "no Runlet credentials", or another stack's).
  expect(readyLine("/src/runlet", "/src/runlet", "/tmp/hf-home")).toBe(
    `Runlet is ready. Try: export RUNLET_HOME=/tmp/hf-home && ${TRY}`,
  );
});
