// Replica grants (runtime-host/pool/grants.ts): one request per app at a time, and everyone who
// asked while it was under way hears its answer.
import { describe, expect, it } from "vitest";
import { type GrantTarget, ReplicaGrants } from "./grants.ts";

const target: GrantTarget = {
  project: "p",
  app: "a",
  version: 1,
  config: { scaling: { max_replicas: 2 } },
};

function controlPlane() {
  const answers: Array<(granted: boolean) => void> = [];
  /** What each request said the host has. */
  const had: number[] = [];
  const grants = new ReplicaGrants((_, have) => {
    had.push(have);
    return new Promise((resolve) =>
      answers.push((granted) => resolve({ granted, elsewhere: true })),
    );
  });
  return { grants, answers, had };
}

describe("replica grants", () => {
  it("asks once for callers that come while a request is under way, and tells each of them", async () => {
    const { grants, answers } = controlPlane();
    const heard: string[] = [];
    grants.request(target, 0, (granted) => heard.push(`warm replica: ${granted}`));
    grants.request(target, 0, (granted) => heard.push(`queued call: ${granted}`));
    expect(answers).toHaveLength(1);
    expect(grants.reserved("p", "a")).toBe(1);
    answers[0]?.(true);
    await Promise.resolve();
    expect(heard).toEqual(["warm replica: true", "queued call: true"]);
    expect(grants.take(target)).toBe(true);
    expect(grants.take(target)).toBe(false);
  });

  it("tells every waiter no when the control plane cannot be asked, and asks again next time", async () => {
    const grants = new ReplicaGrants(() => Promise.reject(new Error("unreachable")));
    const heard: boolean[] = [];
    grants.request(target, 0, (g) => heard.push(g));
    grants.request(target, 0, (g) => heard.push(g));
    await new Promise((r) => setTimeout(r, 0));
    expect(heard).toEqual([false, false]);
    expect(grants.reserved("p", "a")).toBe(0);
  });

  it("says how many replicas the host has: those it runs and the grants it holds", async () => {
    const { grants, answers, had } = controlPlane();
    grants.request(target, 1, () => {});
    answers[0]?.(true); // held, not yet used
    await Promise.resolve();
    grants.request(target, 1, () => {});
    expect(had).toEqual([1, 2]);
  });

  it("gives up the grants it holds when told to (the host is to run fewer replicas)", async () => {
    const { grants, answers } = controlPlane();
    grants.request(target, 0, () => {});
    answers[0]?.(true);
    await Promise.resolve();
    expect(grants.reserved("p", "a")).toBe(1);
    grants.drop("p", "a");
    expect(grants.reserved("p", "a")).toBe(0);
    expect(grants.take(target)).toBe(false);
  });
});
