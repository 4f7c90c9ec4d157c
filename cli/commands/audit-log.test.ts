import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CSV_HEADER, csvRecord } from "../../control-plane/audit/export.ts";
import { recordCounter } from "./audit-log.ts";

/** `text` cut at the given offsets, as a download may arrive. */
const pieces = (text: string, cuts: number[]) => {
  const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  return [0, ...at].map((from, i) => text.slice(from, at[i] ?? text.length));
};

describe("recordCounter", () => {
  it("counts CSV entries whatever the fields hold and however the stream is cut", () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.string({ unit: "binary" }), { minLength: 1, maxLength: 4 }), {
          maxLength: 20,
        }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (records, cuts) => {
          const counter = recordCounter("csv");
          const text = CSV_HEADER + records.map(csvRecord).join("");
          for (const piece of pieces(text, cuts)) counter.feed(piece);
          expect(counter.entries).toBe(records.length);
        },
      ),
    );
  });

  it("counts NDJSON lines", () => {
    const counter = recordCounter("ndjson");
    for (const piece of ['{"a":"x\\n', 'y"}\n{"b":', '"\\"q"}\n']) counter.feed(piece);
    expect(counter.entries).toBe(2);
  });
});
