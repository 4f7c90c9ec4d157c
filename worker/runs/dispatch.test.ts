/**
 * The shard's open hand-overs (dispatch.ts): which hosts hold one long unanswered, and calling
 * off every one a host holds when it no longer answers (a host lost without a reset).
 */
import { describe, expect, it } from "vitest";
import { Dispatch } from "./dispatch.ts";

describe("open hand-overs", () => {
  it("names the hosts holding one since a time, and withdraws all of one host's", () => {
    const dispatch = new Dispatch();
    const [a1, a2, b1, chosing] = ["a1", "a2", "b1", "c1"].map((id) => dispatch.begin(id)) as [
      AbortSignal,
      AbortSignal,
      AbortSignal,
      AbortSignal,
    ];
    const a = { id: "host-a", url: "http://a" };
    dispatch.sentTo("a1", a);
    dispatch.sentTo("a2", a);
    dispatch.sentTo("b1", { id: "host-b", url: "http://b" });
    expect(dispatch.hostOf("a2")).toEqual(a);
    // c1 has no host yet (placement under way): no host to ask about it.
    const now = Date.now();
    expect(dispatch.hostsWaitedOn(now).sort()).toEqual(["http://a", "http://b"]);
    expect(dispatch.hostsWaitedOn(now - 60_000)).toEqual([]); // none that old

    dispatch.withdrawFrom("http://a");
    expect([a1.aborted, a2.aborted, b1.aborted, chosing.aborted]).toEqual([
      true,
      true,
      false,
      false,
    ]);
    dispatch.end("a1");
    dispatch.end("a2");
    expect(dispatch.hostsWaitedOn(Date.now())).toEqual(["http://b"]);
  });
});
