/**
 * One client connection of the run API's port joined to the Worker's workerd (worker-direct.ts),
 * over as many workerd connections as it takes.
 *
 * workerd closes a connection on which no request came for 5 s. Passed on as it is, that close
 * reaches a client that keeps its connections longer (Node's `http.Agent` with `keepAlive`)
 * just as it may be writing its next request, which then meets a reset. So:
 * - a workerd connection that closes with every request on it answered whole (http-framing.ts)
 *   and nothing on it either way for `closedIdleMs` was closed for being idle: the client's
 *   connection stays open, and its next bytes open a new one;
 * - the bytes a client writes after such a silence, every request before them answered, are
 *   kept until workerd answers. If workerd closes the connection within `crossMs` without a
 *   byte of answer, its close crossed them (it had stopped reading) and they are written again
 *   on a new connection. A workerd that ended (a crash, a reload) does not take that
 *   connection, so nothing runs twice.
 * Any other close of workerd's side (an answer cut midway or a request left unanswered, however
 * long after the last byte, `Connection: close`, a reload) reaches the client as before. A
 * client's connection left without a workerd one ends after `clientIdleMs` with nothing from it.
 */
import { connect, type Socket } from "node:net";
import { Framing } from "./http-framing.ts";

export interface Target {
  host: string;
  port: number;
}

export interface IdleRules {
  closedIdleMs: number;
  crossMs: number;
  clientIdleMs: number;
}

/** workerd (kj's HTTP server) closes a connection after 5 s without a request. */
const IDLE_RULES: IdleRules = { closedIdleMs: 4_000, crossMs: 1_000, clientIdleMs: 75_000 };

/** The most bytes kept to write again (a request's head and a small body); past it, none are. */
const MAX_RESEND_BYTES = 256 * 1024;

export interface Joining {
  /** The Worker's workerd, once there is one. */
  target(): Promise<Target>;
  /** wrangler is replacing the Worker's workerd: its closes are passed on. */
  reloading(): boolean;
  /** Every socket open, for the port's teardown. */
  open: Set<Socket>;
  idle?: IdleRules;
}

export function join(client: Socket, port: Joining): void {
  const rules = port.idle ?? IDLE_RULES;
  const track = (socket: Socket) => {
    port.open.add(socket);
    socket.once("close", () => port.open.delete(socket));
  };
  track(client);
  client.setNoDelay(true);
  client.setTimeout(rules.clientIdleMs);
  let worker: Socket | undefined;
  /** Where the requests and the answers on `worker` begin and end. */
  let asked = new Framing("requests");
  let answers = new Framing("answers");
  /** Every request on `worker` has had its whole answer: workerd may close it as idle. */
  const settled = () => asked.between && answers.between && asked.ended === answers.ended;
  /** When a byte last went either way on `worker`. */
  let lastByte = 0;
  /** The client's bytes since a silence, kept until workerd answers (or too many to keep). */
  let resend: Buffer[] | undefined;
  let resendBytes = 0;
  /** The client's bytes waiting for a workerd connection being opened. */
  let waiting: Buffer[] | undefined;
  let clientEnded = false;

  const send = (to: Socket, chunk: Buffer) => {
    const now = Date.now();
    if (!resend && now - lastByte >= rules.closedIdleMs && settled()) {
      resend = [];
      resendBytes = 0;
    }
    if (resend) {
      resendBytes += chunk.length;
      if (resendBytes > MAX_RESEND_BYTES) resend = undefined;
      else resend.push(chunk);
    }
    lastByte = now;
    asked.read(chunk);
    if (!to.write(chunk)) client.pause();
  };

  const open = (first: Buffer[]) => {
    waiting = first;
    client.pause();
    client.setTimeout(0);
    void port.target().then((to) => {
      if (client.destroyed) return;
      const w = connect({ ...to, allowHalfOpen: true }).setNoDelay(true);
      track(w);
      worker = w;
      asked = new Framing("requests");
      answers = new Framing("answers");
      lastByte = Date.now();
      for (const chunk of waiting ?? []) send(w, chunk);
      waiting = undefined;
      if (clientEnded) w.end();
      client.resume();
      w.on("data", (chunk: Buffer) => {
        if (w !== worker) return;
        resend = undefined;
        lastByte = Date.now();
        answers.read(chunk);
        if (!client.write(chunk)) w.pause();
      });
      w.on("drain", () => client.resume());
      w.once("end", () => lost(w, "end"));
      w.once("close", () => lost(w, "close"));
      w.on("error", () => lost(w, "close"));
    });
  };

  const lost = (w: Socket, kind: "end" | "close") => {
    if (w !== worker) return;
    worker = undefined;
    w.destroy();
    const since = Date.now() - lastByte;
    const again = resend && since < rules.crossMs ? resend : undefined;
    resend = undefined;
    if (!port.reloading() && (again || (since >= rules.closedIdleMs && settled()))) {
      if (again) return open(again);
      if (clientEnded) return void client.end();
      client.setTimeout(rules.clientIdleMs);
      return;
    }
    if (kind === "end") client.end();
    else client.destroy();
  };

  client.on("data", (chunk: Buffer) => {
    if (worker) return send(worker, chunk);
    if (waiting) waiting.push(chunk);
    else open([chunk]);
  });
  client.on("drain", () => worker?.resume());
  client.once("end", () => {
    clientEnded = true;
    if (worker) worker.end();
    else if (!waiting) client.end();
  });
  client.on("timeout", () => {
    if (!worker && !waiting) client.destroy();
  });
  client.on("error", () => client.destroy());
  client.once("close", () => worker?.destroy());
}
