/**
 * What the host's heartbeat says (its load and warm apps, from the pool) and what it does with
 * the answer (docs/hosts.md): apps gone are removed, current versions noted (app-versions.ts:
 * fetched now if the host runs the app), replicas beyond what the control plane lets the host
 * keep retired, replicas that read a project's secrets before its latest change replaced. A
 * control plane that cannot write heartbeats (its disk full) says so in its
 * answer; the host's log says so once, and once more when it writes them again.
 */
import type { AppVersions } from "./app-versions.ts";
import type { Intake } from "./intake.ts";
import { heartbeatOf } from "./load.ts";
import type { MembershipOptions } from "./membership.ts";
import type { ReplicaPool } from "./pool/pool.ts";

export function heartbeatSides(
  versions: AppVersions,
  pool: ReplicaPool,
  intake: Pick<Intake, "open">,
): Pick<MembershipOptions, "heartbeat" | "answered"> {
  /**
   * The news the host had when the heartbeat went: heartbeats go one at a time, each answered
   * before the next is composed, so an answer is read against its own heartbeat's. A `gone`
   * judged before a deploy of the same name reached the host must not remove the new app.
   */
  let sentAt = 0;
  /** What the control plane said of itself last (its disk full): logged when it changes. */
  let degraded: string | undefined;
  return {
    heartbeat: () => {
      sentAt = versions.heard;
      return heartbeatOf(pool.stats(), intake.open);
    },
    answered: ({ gone, current, secrets, degraded: now }) => {
      if (now !== degraded)
        console.error(
          now
            ? `runtime host: the control plane is degraded: ${now}`
            : "runtime host: the control plane writes heartbeats again",
        );
      degraded = now;
      for (const { project, app } of gone) void versions.gone(project, app, sentAt);
      for (const { project, app, keep, ...version } of current) {
        if (keep !== undefined) pool.keepAtMost(project, app, keep);
        versions.setCurrent(project, app, version);
      }
      for (const { project, revision } of secrets ?? []) pool.secretsChanged(project, revision);
    },
  };
}
