// The logs of runs on disk: real files in a temp folder, written by one store and read back by
// another opened on the same folder, as a host restarted (or killed and started again) does.
import {
  appendFile,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  utimes,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FLUSH_MS, fileKeyOf } from "./run-log-files.ts";
import { RunLogStore } from "./run-logs.ts";

const OWNER = { project: "prj_1", app: "logger" };
const LIMITS = { bytesPerRun: 1024, runs: 10 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const texts = (log: { lines: Array<{ text: string; seq?: number }> } | undefined) =>
  log?.lines.map((l) => `${l.seq ?? "-"}:${l.text}`);

describe("RunLogStore on disk", () => {
  let dir: string;
  const stores: RunLogStore[] = [];
  const open = async (limits: ConstructorParameters<typeof RunLogStore>[0] = LIMITS) => {
    const store = await RunLogStore.open(dir, limits);
    stores.push(store);
    return store;
  };

  beforeEach(async () => {
    dir = join(await mkdtemp(join(tmpdir(), "run-logs-")), "run-logs");
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    await rm(join(dir, ".."), { recursive: true, force: true });
  });

  it("serves a run's log after a restart, as it did before: lines, numbers, after, owner", async () => {
    const store = await open();
    store.open("run_1", OWNER);
    store.write("run_1", "stdout", "one\ntwo\n", 1_000);
    store.write("run_1", "stderr", "oops\n", 1_001);
    store.write("run_1", "stdout", "unfinished");
    store.flush("run_1"); // the run ended
    const before = store.get("run_1");
    await store.close();

    const again = await open();
    expect(again.has("run_1")).toBe(true);
    expect(await again.read("run_1")).toEqual(before);
    expect(texts(await again.read("run_1", 2))).toEqual(["3:oops", "4:unfinished"]);
    expect((await again.read("run_1"))?.lines[2]).toMatchObject({
      stream: "stderr",
      time: new Date(1_001).toISOString(),
    });
    expect(await again.read("run_2")).toBeUndefined();
  });

  it("keeps the whole lines of a run still running when the host is killed (no close)", async () => {
    const store = await open();
    store.open("run_live", OWNER);
    store.write("run_live", "stdout", "started\nhalf a line");
    await sleep(FLUSH_MS * 3);
    // A second store on the folder, the first never closed: a host killed and started again.
    const again = await open();
    expect(texts(await again.read("run_live"))).toEqual(["1:started"]);
  });

  it("makes no file for a run that writes nothing", async () => {
    const store = await open();
    store.open("run_quiet", OWNER);
    store.write("run_quiet", "stdout", "no newline yet");
    await store.close();
    expect(await readdir(dir)).toEqual([]);
  });

  it("reads a file cut short by a kill up to its last whole line, and goes on writing after it", async () => {
    const store = await open();
    store.open("run_torn", OWNER);
    store.write("run_torn", "stdout", "one\ntwo\n");
    await store.close();
    const file = join(dir, "run_torn.jsonl");
    await appendFile(file, '{"n":3,"at":1,"s":"o","t":"thr');

    const again = await open();
    expect(texts(await again.read("run_torn"))).toEqual(["1:one", "2:two"]);
    // Opened again (the run called once more): its next lines follow, readable after a restart.
    again.open("run_torn", OWNER);
    again.write("run_torn", "stdout", "three\n");
    await again.close();
    expect(texts(await (await open()).read("run_torn"))).toEqual(["1:one", "2:two", "3:three"]);
  });

  it("starts whatever the folder holds: damaged files, a rewrite's temp file, a header cut short", async () => {
    const store = await open();
    store.open("run_ok", OWNER);
    store.write("run_ok", "stdout", "fine\n");
    await store.close();
    await writeFile(join(dir, "run_garbage.jsonl"), "\u0000\u0001not json at all\n{");
    await writeFile(join(dir, "run_cut.jsonl"), '{"runId":"run_cut","proj');
    await writeFile(join(dir, "run_ok.jsonl.123.tmp"), "half a rewrite");
    await writeFile(
      join(dir, "run_badline.jsonl"),
      '{"runId":"run_badline","project":"prj_1","app":"a"}\n{"n":1,"at":1,"s":"o","t":"kept"}\nnot json\n{"n":3,"at":1,"s":"o","t":"after the damage"}\n',
    );

    // A time no Date holds would fail the answer (toISOString): read up to it.
    await writeFile(
      join(dir, "run_badtime.jsonl"),
      '{"runId":"run_badtime","project":"prj_1","app":"a"}\n{"n":1,"at":1,"s":"o","t":"kept"}\n{"n":2,"at":1e20,"s":"o","t":"when?"}\n',
    );

    const again = await open();
    expect(texts(await again.read("run_badtime"))).toEqual(["1:kept"]);
    expect(texts(await again.read("run_ok"))).toEqual(["1:fine"]);
    expect(await again.read("run_garbage")).toBeUndefined();
    expect(await again.read("run_cut")).toBeUndefined();
    expect(texts(await again.read("run_badline"))).toEqual(["1:kept"]);
    await again.close();
    // What held no log is gone, and so is the temp file.
    expect((await readdir(dir)).sort()).toEqual([
      "run_badline.jsonl",
      "run_badtime.jsonl",
      "run_ok.jsonl",
    ]);
  });

  it("starts with its folder unusable (a file in its place), keeping logs in memory", async () => {
    await writeFile(dir, "not a folder");
    const said = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const store = await open();
      store.open("run_1", OWNER);
      store.write("run_1", "stdout", "kept\n");
      await store.close();
      expect(texts(store.get("run_1"))).toEqual(["1:kept"]);
      expect(said).toHaveBeenCalledTimes(1);
      expect(String(said.mock.calls[0]?.[0])).toMatch(
        /^runtime host: cannot write the logs of runs to .*run-logs \(EEXIST\); they are kept in memory only, and lost at a restart$/,
      );
    } finally {
      said.mockRestore();
    }
  });

  it("keeps the latest runs only, across restarts, and removes the others' files", async () => {
    const store = await open({ bytesPerRun: 1024, runs: 2 });
    for (const [i, runId] of ["run_a", "run_b"].entries()) {
      store.open(runId, OWNER);
      store.write(runId, "stdout", `${runId}\n`);
      await store.close();
      // Their order after a restart is that of their last writes.
      await utimes(join(dir, `${runId}.jsonl`), 1_000 + i, 1_000 + i);
    }
    const again = await open({ bytesPerRun: 1024, runs: 2 });
    again.open("run_c", OWNER);
    again.write("run_c", "stdout", "c\n");
    await again.close();
    expect((await readdir(dir)).sort()).toEqual(["run_b.jsonl", "run_c.jsonl"]);
    // Fewer runs allowed at the next start: the oldest go at once.
    const fewer = await open({ bytesPerRun: 1024, runs: 1 });
    await fewer.close();
    expect(await readdir(dir)).toEqual(["run_c.jsonl"]);
    expect(texts(await fewer.read("run_c"))).toEqual(["1:c"]);
  });

  it("keeps a run's file within a few times its cap, and its newest lines, numbered, after a restart", async () => {
    const store = await open({ bytesPerRun: 1024, runs: 10 });
    store.open("run_loud", OWNER);
    for (let i = 1; i <= 5_000; i++) store.write("run_loud", "stdout", `line ${i}\n`);
    const before = store.get("run_loud");
    await store.close();
    const { size } = await stat(join(dir, "run_loud.jsonl"));
    // 5,000 lines were about 200 KB of records; what the run keeps is 1 KiB of text.
    expect(size).toBeLessThanOrEqual(8 * 1024);
    const after = await (await open({ bytesPerRun: 1024, runs: 10 })).read("run_loud");
    expect(after).toEqual(before);
    expect(after?.truncated).toBe(true);
    expect(after?.lines.at(-1)).toMatchObject({ text: "line 5000", seq: 5_000 });
  });

  it("reads back the numbers of a run whose single write dropped lines, and goes on after them", async () => {
    const store = await open({ bytesPerRun: 1024, runs: 10 });
    const line = (i: number) => `line ${i} ${"x".repeat(200)}`;
    store.open("run_one", OWNER);
    store.write("run_one", "stdout", `${line(1)}\n${line(2)}\n`);
    await sleep(FLUSH_MS * 3); // lines 1 and 2 in its file
    let text = "";
    for (let i = 3; i <= 40; i++) text += `${line(i)}\n`; // 8 KiB in one write
    store.write("run_one", "stdout", text);
    const before = store.get("run_one");
    expect(before?.lines.at(-1)).toMatchObject({ text: line(40), seq: 40 });
    await store.close();
    const again = await open({ bytesPerRun: 1024, runs: 10 });
    expect(await again.read("run_one")).toEqual(before);
    again.open("run_one", OWNER);
    again.write("run_one", "stdout", `${line(41)}\n`);
    await again.close();
    const after = await (await open({ bytesPerRun: 1024, runs: 10 })).read("run_one", 39);
    expect(texts(after)).toEqual([`40:${line(40)}`, `41:${line(41)}`]);
  });

  it("drops the oldest runs past its bytes on disk, the run writing now kept", async () => {
    const store = await open({ bytesPerRun: 1024, runs: 10, diskBytes: 3_000 });
    for (const runId of ["run_1", "run_2", "run_3", "run_4"]) {
      store.open(runId, OWNER);
      store.write(runId, "stdout", `${"x".repeat(900)}\n`);
    }
    await store.close();
    expect((await readdir(dir)).sort()).toEqual(["run_2.jsonl", "run_3.jsonl", "run_4.jsonl"]);
    expect(store.has("run_1")).toBe(false);
    let bytes = 0;
    for (const name of await readdir(dir)) bytes += (await stat(join(dir, name))).size;
    expect(bytes).toBeLessThanOrEqual(3_000);
  });

  it("names the file of a run id with other characters by its hash, and reads it back", async () => {
    const runId = "run ../é/x";
    const store = await open();
    store.open(runId, OWNER);
    store.write(runId, "stdout", "odd\n");
    await store.close();
    expect(await readdir(dir)).toEqual([`${fileKeyOf(runId)}.jsonl`]);
    expect(await readFile(join(dir, `${fileKeyOf(runId)}.jsonl`), "utf8")).toContain(
      JSON.stringify(runId),
    );
    expect(texts(await (await open()).read(runId))).toEqual(["1:odd"]);
  });
});
