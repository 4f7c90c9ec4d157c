/**
 * `GET /v2/projects/{projectId}/audit-log/export?format=…`: the formats and the content type
 * each is answered with. The control plane sends it; `runlet audit-log --export` checks it, so
 * that another server's 200 (a proxy's page) is not written out as the export.
 */
export const EXPORT_FORMATS = ["csv", "ndjson"] as const;

export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: "text/csv; charset=utf-8",
  ndjson: "application/x-ndjson",
};
