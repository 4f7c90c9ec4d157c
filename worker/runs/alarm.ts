/**
 * A shard's one alarm, which serves every deadline of every run in it (see shard.ts). Moving it
 * is a storage write, so it moves only when a sooner time is needed: an alarm set earlier than
 * needed stays, finds nothing due and sets the next one. That spares a write on most moves of a
 * run (the alarm would go back and forth otherwise).
 */

/** While runs are queued the alarm is never further away than this. */
const QUEUED_ALARM_MS = 30_000;

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
    const current = this.#at;
    let at = Math.min(...times.filter((t): t is number => t !== undefined));
    if (queued && at > now + QUEUED_ALARM_MS) {
      // One due and not yet fired (workerd runs an alarm late on a loaded machine) is set again
      // for now, not 30 s on: pushed on by every move of a run, it never fired under steady
      // traffic. It is written again all the same, which brings back one that was lost.
      if (current !== null && current <= now) at = now;
      else if (current !== null && current <= now + QUEUED_ALARM_MS) at = current;
      else at = now + QUEUED_ALARM_MS;
    }
    if (current !== null && current > now && current <= at) return;
    if (Number.isFinite(at)) {
      this.#at = at;
      void this.storage.setAlarm(at);
    } else if (current !== null) {
      this.#at = null;
      void this.storage.deleteAlarm();
    }
  }
}
