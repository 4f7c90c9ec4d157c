/**
 * The page size of the management API's lists (`?limit`, docs/api.md "Lists that page on
 * request"): the control plane checks it (control-plane/openapi.ts), the CLI before it asks.
 */
export const MAX_PAGE_SIZE = 200;
export const DEFAULT_PAGE_SIZE = 50;
