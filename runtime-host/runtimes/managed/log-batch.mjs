// How the managed runtime's shim (shim.mjs) sends what calls write: in batches, not a message
// per write (one IPC message costs tens of microseconds; a loop of console.log spent its time
// there). Plain JavaScript for plain `node`, as the shim is.
//
// A batch goes out at once when none went out yet in this turn of the event loop (a program
// that writes a line now and then sends it at once, as before, and one stuck in a loop after
// it has still sent it); else at the end of the turn (setImmediate), once it holds about
// BATCH_BYTES, or when the shim calls `flush`: before each call's result, so that a call's log
// is all in before its result (IPC keeps the order), and as the process exits.

/**
 * @typedef {import("../../pool/messages.ts").LogEntry} LogEntry
 * @typedef {import("../../pool/messages.ts").LogMessage} LogMessage
 */

/** About how many bytes of JSON a batch holds before it is sent. */
export const BATCH_BYTES = 16 * 1024;

/** Bytes of an entry's JSON besides its run id and text. */
const ENTRY_BYTES = 64;

export class LogBatch {
  /** @type {LogEntry[]} */
  #entries = [];
  #bytes = 0;
  /** A batch went out in this turn of the event loop: more waits for its end. */
  #sentThisTurn = false;
  #turnEnds = false;

  #send;

  /** @param {(msg: LogMessage) => void} send */
  constructor(send) {
    this.#send = send;
  }

  /**
   * Adds one write of a run. Writes of one run to one stream in the same millisecond are one
   * entry: each keeps its time to the millisecond, as if it had been sent alone.
   * @param {LogEntry} entry
   */
  add(entry) {
    const last = this.#entries.at(-1);
    if (
      last &&
      last.runId === entry.runId &&
      last.stream === entry.stream &&
      last.at === entry.at
    ) {
      last.text += entry.text;
      this.#bytes += entry.text.length;
    } else {
      this.#entries.push(entry);
      this.#bytes += ENTRY_BYTES + entry.runId.length + entry.text.length;
    }
    if (!this.#sentThisTurn || this.#bytes >= BATCH_BYTES) this.flush();
    else this.#endOfTurn();
  }

  /** Sends what is held now. */
  flush() {
    if (this.#entries.length === 0) return;
    const entries = this.#entries;
    this.#entries = [];
    this.#bytes = 0;
    this.#sentThisTurn = true;
    this.#endOfTurn();
    this.#send({ type: "log", entries });
  }

  #endOfTurn() {
    if (this.#turnEnds) return;
    this.#turnEnds = true;
    setImmediate(() => {
      this.#turnEnds = false;
      this.#sentThisTurn = false;
      // What this turn left is sent now, as a batch of the next turn (whose writes wait for
      // its end in turn).
      this.flush();
    });
  }
}
