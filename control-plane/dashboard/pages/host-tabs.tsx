/**
 * The two pages of this Runlet's hosts, for its operators (docs/hosts.md): the hosts, and the
 * join tokens new hosts register with. Each heads the other's link, so either is one click away.
 */
export const PATH = "/dashboard/hosts";
export const TOKENS_PATH = `${PATH}/tokens`;

const TABS = [
  { path: PATH, label: "Hosts" },
  { path: TOKENS_PATH, label: "Join tokens" },
] as const;

export function HostTabs({ current }: { current: string }) {
  return (
    <nav class="tabs" aria-label="Hosts and their join tokens">
      {TABS.map((t) => (
        <a href={t.path} aria-current={t.path === current ? "page" : undefined}>
          {t.label}
        </a>
      ))}
    </nav>
  );
}
