/**
 * A runtime host as the operator's lists show it (`runlet hosts`, the dashboard's hosts page),
 * from `GET /v2/hosts` (docs/hosts.md, "Who is an operator"). A down host's load and apps are
 * what its last heartbeat said, not what runs there now: its state says how long it has been
 * silent, its apps are "last: …". A stopped host runs nothing: its state says since when.
 */
export interface HostView {
  id: string;
  name: string;
  address: string;
  state: string;
  slots: number;
  busy: number;
  queued: number;
  seenAt: string;
  /** The Worker could not connect to it at its address (for a minute after it last said so). */
  unreachable?: { at: string; error: string };
  apps: Array<{ project: string; app: string; replicas: number }>;
}

/** Apps a list names per host; the rest are counted (`--json` and the API have them all). */
export const APPS_SHOWN = 6;

/**
 * A host's apps, those with the most replicas first: a host with 150 apps warm was one line of
 * some 1,900 characters, every app in the order of its heartbeat.
 */
function appsOf(apps: HostView["apps"]): string {
  if (apps.length === 0) return "—";
  const sorted = apps.toSorted((x, y) => y.replicas - x.replicas || x.app.localeCompare(y.app));
  const shown = sorted.slice(0, APPS_SHOWN).map((a) => `${a.app}×${a.replicas}`);
  const rest = sorted.length - shown.length;
  return rest > 0 ? `${shown.join(" ")} +${rest} more` : shown.join(" ");
}

/** How long ago `iso` was, roughly: "40 s", "3 min", "2 h", "5 d". */
function since(iso: string, now: number): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return s < 172_800 ? `${Math.round(s / 3600)} h` : `${Math.round(s / 86_400)} d`;
}

/** What a list shows of a host: its state in words, its load (`—` when it runs nothing now). */
export function hostView(
  h: HostView,
  now = Date.now(),
): { state: string; busy: string; queued: string; apps: string } {
  const apps = appsOf(h.apps);
  if (h.state === "stopped")
    return { state: `stopped ${since(h.seenAt, now)} ago`, busy: "—", queued: "—", apps: "—" };
  if (h.state === "down")
    return {
      state: `down, silent ${since(h.seenAt, now)}`,
      busy: "—",
      queued: "—",
      apps: h.apps.length > 0 ? `last: ${apps}` : "—",
    };
  // Up to the registry, but the run API's Worker could not connect to it: no work goes there.
  const state = h.unreachable
    ? `${h.state}, unreachable ${since(h.unreachable.at, now)} ago: ${h.unreachable.error}`
    : h.state;
  return { state, busy: `${h.busy}/${h.slots}`, queued: String(h.queued), apps };
}

/**
 * The hosts registered with a join token, as `runlet hosts tokens|revoke` and the dashboard's
 * join-tokens pages say them: `rack-b (up), rack-c (down)`, or none.
 */
export const joinedHostsText = (hosts: ReadonlyArray<{ name: string; state: string }>) =>
  hosts.length === 0 ? "none" : hosts.map((h) => `${h.name} (${h.state})`).join(", ");
