/**
 * Replicas a host may start of each app when the control plane counts them over all hosts
 * (docs/hosts.md, "Replicas over all hosts"): before a new replica, the host asks for a grant;
 * one request per app at a time. A grant is held until a replica uses it. The grants held or
 * being asked for count as the app's replicas in the host's heartbeat, so a heartbeat never
 * lowers the registry's count below what it granted.
 */
import { appKey } from "../names.ts";

/** What a grant is for: an app's version and its scaling (a pool's target is one). */
export interface GrantTarget {
  project: string;
  app: string;
  version: number;
  config: { scaling: { max_replicas: number } };
}

/**
 * The control plane's answer: `elsewhere`, whether other hosts hold some of the app's places
 * (a refused call may go there); unknown is taken as yes.
 */
export interface GrantAnswer {
  granted: boolean;
  elsewhere: boolean;
  /** Why the control plane could not be asked (no answer, or not a grant's): no grant. */
  unasked?: string;
}

type Answered = (granted: boolean, elsewhere: boolean, unasked?: string) => void;

interface AppGrants {
  /** Who waits for the answer of the request under way (none: no request is). */
  asking: Answered[] | undefined;
  held: number;
}

export class ReplicaGrants {
  readonly #apps = new Map<string, AppGrants>();

  /**
   * `ask`: may this host, which has `have` replicas of `target`'s app (running ones and grants
   * held), start one more (over all hosts)?
   */
  constructor(private readonly ask: (target: GrantTarget, have: number) => Promise<GrantAnswer>) {}

  /** Uses a grant held for the app; false if none is. */
  take(target: GrantTarget): boolean {
    const app = this.#apps.get(appKey(target.project, target.app));
    if (!app || app.held === 0) return false;
    app.held--;
    return true;
  }

  /**
   * Asks for a grant unless one is being asked for; `answered` runs with the answer — of this
   * request, or of the one under way (a call queued while a warm replica's grant is asked for
   * hears of it too). `running`: the app's replicas on this host, retired ones still finishing
   * calls included.
   */
  request(target: GrantTarget, running: number, answered: Answered): void {
    const key = appKey(target.project, target.app);
    let app = this.#apps.get(key);
    if (!app) {
      app = { asking: undefined, held: 0 };
      this.#apps.set(key, app);
    }
    if (app.asking) {
      app.asking.push(answered);
      return;
    }
    const got = app;
    const waiting = [answered];
    got.asking = waiting;
    const tell = ({ granted, elsewhere, unasked }: GrantAnswer) => {
      got.asking = undefined;
      if (granted) got.held++;
      for (const waiter of waiting) waiter(granted, elsewhere, unasked);
    };
    // The control plane cannot be asked: no grant, this time.
    this.ask(target, running + got.held).then(tell, (err: unknown) =>
      tell({ granted: false, elsewhere: true, unasked: (err as Error).message || "no answer" }),
    );
  }

  /** Grants held or being asked for. */
  reserved(project: string, app: string): number {
    const grants = this.#apps.get(appKey(project, app));
    return grants ? grants.held + (grants.asking ? 1 : 0) : 0;
  }

  /** Gives up the grants held for the app (the host is to run fewer replicas of it). */
  drop(project: string, app: string): void {
    const grants = this.#apps.get(appKey(project, app));
    if (grants) grants.held = 0;
  }

  forget(project: string, app: string): void {
    this.#apps.delete(appKey(project, app));
  }
}
