// A component whose log cannot be written (a full disk, a folder gone) runs on, and so does
// `runlet start`: the log stream's error was unhandled and ended the whole stack.
import { describe, expect, it } from "vitest";
import { startProcess } from "./processes.ts";

describe("a component's log", () => {
  it("that cannot be written drops the output, and the component and its supervisor go on", async () => {
    const proc = startProcess("writer", process.execPath, ["-e", "console.log('still here')"], {
      cwd: process.cwd(),
      env: process.env,
      logFile: "/nonexistent-runlet-dir/writer.log",
      echo: false,
    });
    expect(await proc.exited).toBe("code 0");
    expect(proc.tail()).toContain("still here");
  });
});
