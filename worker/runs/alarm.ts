/**
 * A shard's one alarm, which serves every deadline of every run in it (see shard.ts). Moving it
 * is a storage write, so it moves only when a sooner time is needed: an alarm set earlier than
 * needed stays, finds nothing due and sets the next one. That spares a write on most moves of a
 * run (the alarm would go back and forth otherwise).
 */

/** While runs are queued the alarm is never further away than this. */
const QUEUED_ALARM_MS = 30_000;

/**
 * An alarm whose time has come is left to fire (workerd runs one up to a second or so late on a
 * loaded machine) unless it is this late: then it is taken as lost and set again.
 */
const LOST_AFTER_MS = 5_000;

export class ShardAlarm {
  /** The alarm as last set (null: none). */
  #at: number | null = null;

  constructor(private readonly storage: DurableObjectStorage) {}

  /** The alarm fired: none is set until the next `set`. */
  fired(): void {
    this.#at = null;
  }

  /**
   * Sets the alarm to the soonest of `times`; while `queued`, at most `QUEUED_ALARM_MS` away
   * (hand-overs open in an instance die with it, and the next alarm of its successor hands
   * their runs over again). Nothing due and nothing queued: no alarm.
   */
  set(times: Array<number | undefined>, queued: boolean): void {
    const now = Date.now();
    // The alarm set and not yet fired. One that is due but has not fired yet stays: set again
    // 30 s on by every move of a run meanwhile, it never fired under steady traffic.
    const current = this.#at !== null && this.#at > now - LOST_AFTER_MS ? this.#at : null;
    let at = Math.min(...times.filter((t): t is number => t !== undefined));
    if (queued && at > now + QUEUED_ALARM_MS) {
      at = current !== null && current <= now + QUEUED_ALARM_MS ? current : now + QUEUED_ALARM_MS;
    }
    if (current !== null && current <= at) return;
    if (Number.isFinite(at)) {
      this.#at = at;
      void this.storage.setAlarm(at);
    } else if (this.#at !== null) {
      this.#at = null;
      void this.storage.deleteAlarm();
    }
  }
}
