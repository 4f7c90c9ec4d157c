/**
 * The dashboard's sections, as its navigation offers them, and the first segments of its pages'
 * paths: `runlet dashboard <page>` refuses a page under none of them, whose link landed on the
 * dashboard's "not found" page after the sign-in.
 */
export const SECTIONS = [
  { path: "/dashboard/runs", label: "Runs" },
  { path: "/dashboard/apps", label: "Apps" },
  // The project's owners' pages: a member who opened one (the audit log's wrote a refused read
  // in the log each time) is told so there, and is not offered them.
  { path: "/dashboard/api-keys", label: "API keys", owners: true },
  { path: "/dashboard/audit-log", label: "Audit log", owners: true },
  { path: "/dashboard/secrets", label: "Secrets", owners: true },
  // This Runlet's runtime hosts: only its operators see them (docs/hosts.md).
  { path: "/dashboard/hosts", label: "Hosts", operators: true },
] as const;

/** `runs`, `apps`, …, and `project` (the project's delete page, /dashboard/project/delete). */
export const DASHBOARD_PAGES: readonly string[] = [
  ...SECTIONS.map((s) => s.path.slice("/dashboard/".length)),
  "project",
];
