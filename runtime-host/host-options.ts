/** How a runtime host is started (runtime-host/server.ts `startHost`). */

import type { HostLimits } from "./limits.ts";
import type { Sandbox } from "./sandbox/sandbox.ts";

export interface HostOptions {
  /** 0 picks a free port; `url` tells which. */
  port: number;
  /** RUNLET_HOME: deployed apps live in `{home}/host/apps/`. */
  home: string;
  /**
   * The bearer token every `/internal/*` request must carry. Unset with `join`: the control
   * plane hands it over at registration.
   */
  internalToken?: string;
  /** Join a control plane's registry of hosts (docs/hosts.md) once listening. */
  join?: JoinOptions;
  /** The address to bind; loopback unless told otherwise. */
  hostname?: string;
  /** Where replicas run; by default bubblewrap if this machine has it (see sandbox.ts). */
  sandbox?: Sandbox;
  /** Shorter time limits, for tests. */
  limits?: Partial<HostLimits>;
  /** Replicas it runs at once outside a registry (in one: `join.slots`); unbounded if neither. */
  slots?: number;
  /** The control plane, whose runs index hears of the runs served here (see run-reports.ts). */
  controlPlaneUrl?: string;
  /**
   * Aborted while the host starts (a signal while it waits to join a registry it cannot reach
   * yet): it gives up, stops its spares (their folders unmounted, their networks removed), and
   * `startHost` rejects with the signal's reason. After the start, `close` is the way to stop.
   */
  signal?: AbortSignal;
}

export interface JoinOptions {
  controlPlaneUrl: string;
  /** Read at each request: a token file may be replaced while the host runs. */
  hostToken: () => string;
  /** The control plane refused a heartbeat (the host token was revoked): the host must stop. */
  refused?: (reason: string) => void;
  name: string;
  /** The URL the Worker reaches this host at; by default the address it listens on. */
  address?: string;
  /** Replicas it runs at once. */
  slots: number;
  memoryMb: number;
}
