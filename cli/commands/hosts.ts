import { hostJoinCommand } from "../../common/host-join.ts";
import { type HostView, hostView, joinedHostsText } from "../../common/host-view.ts";
import { LOCAL_HOST_TOKEN } from "../../common/protocol/hosts.ts";
import { CliError, type Command, takesOnly } from "../command.ts";
import { type CliConfig, callApi, loadConfig, printTable } from "../config.ts";
import { confirmOrStop, YES_OPTION } from "../confirm.ts";

const USAGE = `Usage: runlet hosts [list] [--json]
       runlet hosts drain|resume|remove <host-id> [--json]
       runlet hosts token --name NAME [--json]
       runlet hosts tokens [--json]
       runlet hosts revoke <host-token-id> [--force] [--yes] [--json]

The runtime hosts of this Runlet, and the tokens new hosts join with (operators only; the
local owner is one). See docs/hosts.md.

  list     every host that registered: its state (up; draining: it is stopping; drained:
           by an operator; stopped: it stopped gracefully and said so; down: no heartbeat
           for 15 s, it crashed or cannot reach the control plane), address, load and the
           apps it runs, the most replicas first and at most 6 of them (--json: all; a down
           host: since when it is silent, and the apps of its last heartbeat; a stopped one:
           since when)
  drain    the host takes no new work, and its replicas stop as their calls end (their
           places go to the other hosts); it stays drained until 'resume' (a crash and a
           restart included), or until it stops gracefully and starts again
  resume   a drained host takes work again
  remove   takes a host that is down or stopped out of the list (one decommissioned); one
           still up, draining or drained is refused: stop it first. If it comes back, it joins as a
           new host: revoke its token to keep it out
  token    a new host token, printed once: give it to 'runlet host' on another machine as
           RUNLET_HOST_TOKEN (only its hash is kept)
  tokens   the host tokens (who made each, by name), never the tokens themselves
  revoke   stops a host token: its hosts are refused at their next heartbeat, and stop;
           the token named 'local' (this machine's own hosts, of 'runlet start') only with
           --force. On a terminal it asks first, naming the token and its hosts (default
           No): --yes (-y) answers yes. A script (stdin or stdout not a terminal) is not asked`;

export type { HostView as Host } from "../../common/host-view.ts";

/** A host's line in `runlet hosts` (what a down or a stopped host shows: common/host-view.ts). */
export function hostRow(h: HostView, now = Date.now()): string[] {
  const { state, busy, queued, apps } = hostView(h, now);
  return [h.id, h.name, h.address, state, busy, queued, apps];
}

interface HostToken {
  id: string;
  name: string;
  createdBy: string;
  /** A control plane before 2026-11-27 does not say it. */
  createdByName?: string | null;
  createdAt: string;
  revokedAt: string | null;
  /** The hosts registered with it (a control plane before 2026-11-27 does not say). */
  hosts?: Array<{ id: string; name: string; state: string }>;
}

/** A token's hosts in a line: `rack-b (up), rack-c (down)`, none, or `?` (not said). */
const hostsOf = (t: HostToken) => (t.hosts ? joinedHostsText(t.hosts) : "?");

/**
 * A drain, resume or remove of host `id`. A 404 for a host's name (the NAME column, given for
 * its ID) names the ids it has: it said only "no host 'rack-2' in the registry".
 */
async function onHost(config: CliConfig, method: string, id: string, verb: string, what: string) {
  const path = `/v2/hosts/${encodeURIComponent(id)}${verb ? `/${verb}` : ""}`;
  try {
    await callApi(config, method, path, what);
  } catch (err) {
    if (!(err instanceof CliError) || err.answer?.status !== 404) throw err;
    const named = await callApi<{ hosts: HostView[] }>(config, "GET", "/v2/hosts", what).then(
      ({ hosts }) => hosts.filter((h) => h.name === id).map((h) => `${h.id} (${h.state})`),
      () => [],
    );
    if (named.length === 0) throw err;
    throw new CliError(
      `${err.message}: '${id}' is the name of ${named.length > 1 ? "hosts" : "host"} ${named.join(", ")}; give a host's id (the ID column of runlet hosts)`,
      err.answer,
      err.said,
    );
  }
}

export const hosts: Command = {
  name: "hosts",
  summary: "list, drain and remove the runtime hosts; make and revoke the tokens hosts join with",
  usage: USAGE,
  options: { name: { type: "string" }, force: { type: "boolean" }, ...YES_OPTION },
  async run({ values, positionals }) {
    const [action = "list", ...rest] = positionals;
    const takes = {
      list: {},
      drain: { words: 1 },
      resume: { words: 1 },
      remove: { words: 1 },
      token: { options: ["name"] },
      tokens: {},
      revoke: { options: ["force", "yes"], words: 1 },
    }[action];
    if (!takes)
      throw new CliError(`say list, drain, resume, remove, token, tokens or revoke\n\n${USAGE}`);
    // `hosts tokens create --name x` (as `tokens create` goes) said only "takes no --name".
    if (action === "tokens" && (values.name !== undefined || rest[0] === "create"))
      throw new CliError(
        "hosts tokens lists the join tokens; to make one: runlet hosts token --name N",
      );
    takesOnly(`hosts ${action}`, { values, words: rest }, takes, USAGE);
    const config = await loadConfig(process.env, { anyProject: true });
    const json = (value: unknown) => console.log(JSON.stringify(value));
    if (action === "list") {
      const { hosts } = await callApi<{ hosts: HostView[] }>(
        config,
        "GET",
        "/v2/hosts",
        "listing hosts",
      );
      if (values.json) json({ hosts });
      else
        printTable(
          ["ID", "NAME", "ADDRESS", "STATE", "BUSY", "QUEUED", "APPS"],
          hosts.map((h) => hostRow(h)),
          "No runtime host has registered yet.",
        );
      return 0;
    }
    if (action === "drain" || action === "resume") {
      const [id] = rest;
      if (!id)
        throw new CliError(`give the id of the host to ${action} (runlet hosts)\n\n${USAGE}`);
      await onHost(
        config,
        "POST",
        id,
        action,
        `${action === "drain" ? "draining" : "resuming"} the host`,
      );
      if (values.json) json({ id, [action === "drain" ? "drained" : "resumed"]: true });
      else if (action === "drain")
        console.log(`Drained ${id}: no new work goes there; its replicas stop as their calls end.`);
      else console.log(`Resumed ${id}: it takes work again.`);
      return 0;
    }
    if (action === "remove") {
      const [id] = rest;
      if (!id) throw new CliError(`give the id of the host to remove (runlet hosts)\n\n${USAGE}`);
      await onHost(config, "DELETE", id, "", "removing the host");
      if (values.json) json({ id, removed: true });
      else console.log(`Removed ${id} from the hosts; if it comes back, it joins as a new host.`);
      return 0;
    }
    if (action === "token") {
      if (!values.name) throw new CliError(`--name is required\n\n${USAGE}`);
      const made = await callApi<HostToken & { token: string }>(
        config,
        "POST",
        "/v2/hosts/tokens",
        "creating a host token",
        { name: values.name },
      );
      if (values.json) {
        json(made);
        return 0;
      }
      console.error(`Created host token ${made.name} (${made.id}). It is shown only this once:`);
      console.log(made.token);
      console.error(`On the new machine: ${hostJoinCommand(config.baseUrl)}`);
      return 0;
    }
    if (action === "tokens") {
      const { tokens } = await callApi<{ tokens: HostToken[] }>(
        config,
        "GET",
        "/v2/hosts/tokens",
        "listing host tokens",
      );
      if (values.json) json({ tokens });
      else
        printTable(
          ["ID", "NAME", "CREATED", "STATUS", "CREATED BY", "HOSTS"],
          tokens.map((t) => [
            t.id,
            t.name,
            t.createdAt,
            t.revokedAt ? "revoked" : "active",
            t.createdByName ?? t.createdBy,
            hostsOf(t),
          ]),
          "No host tokens yet: npx runlet hosts token --name N",
        );
      return 0;
    }
    if (action === "revoke") {
      const [id] = rest;
      if (!id) throw new CliError(`give the id of the host token to revoke\n\n${USAGE}`);
      const { tokens } = await callApi<{ tokens: HostToken[] }>(
        config,
        "GET",
        "/v2/hosts/tokens",
        "reading the host tokens",
      );
      const token = tokens.find((t) => t.id === id);
      if (token?.name === LOCAL_HOST_TOKEN && !values.force)
        throw new CliError(
          `${id} is 'local', the token of this machine's own hosts ('runlet start'): revoking it stops them, until the next 'runlet start' makes a new one. Give --force to revoke it all the same`,
        );
      const its = token?.hosts?.length
        ? `its hosts ${hostsOf(token)} are refused at their next heartbeat, and stop`
        : "no host is registered with it now";
      await confirmOrStop(
        async () => {
          // Said before the question: an id mistyped was asked of, and 404 only after a yes.
          if (!token)
            throw new CliError(`host token '${id}' not found (runlet hosts tokens lists them)`);
          return `Revoke host token ${token.name} (${id})? ${its}; no host can join with it again.`;
        },
        `Kept ${id}: nothing was revoked`,
        values.yes,
      );
      await callApi(config, "DELETE", `/v2/hosts/tokens/${encodeURIComponent(id)}`, "revoking");
      if (values.json) json({ id, revoked: true, hosts: token?.hosts });
      else if (token?.hosts?.length)
        console.log(
          `Revoked ${id}: its hosts ${hostsOf(token)} are refused at their next heartbeat, and stop.`,
        );
      else console.log(`Revoked ${id}: no host is registered with it now; none can join with it.`);
      return 0;
    }
    throw new CliError(`say list, drain, resume, remove, token, tokens or revoke\n\n${USAGE}`);
  },
};
