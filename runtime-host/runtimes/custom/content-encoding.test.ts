import { expect, it } from "vitest";
import { decodeBody } from "./content-encoding.ts";

it("leaves an empty body alone whatever content-encoding it claims", async () => {
  // A HEAD's or a 204's, from a server that always says gzip: "unexpected end of file" before.
  for (const coding of ["gzip", "deflate", "br"])
    expect(await decodeBody(Buffer.alloc(0), coding)).toEqual(Buffer.alloc(0));
});
