/** What a host's heartbeat says of it (docs/hosts.md), from its pool's counts. */
import { appLoad, type HostMetrics } from "../common/protocol/host.ts";
import type { Heartbeat } from "../common/protocol/hosts.ts";

export function heartbeatOf(apps: HostMetrics["apps"], open: boolean): Heartbeat {
  let busy = 0;
  let queued = 0;
  const warm = apps.map((a) => {
    const load = appLoad(a);
    busy += load.busy;
    queued += a.queued;
    return {
      project: a.project,
      app: a.app,
      version: a.version,
      replicas: load.replicas,
      ready: a.replicas.filter((r) => r.ready).length,
      busy: load.busy,
    };
  });
  return {
    state: open ? "up" : "draining",
    busy,
    queued,
    apps: warm.filter((a) => a.replicas > 0),
  };
}
