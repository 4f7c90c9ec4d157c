/** Plans and how far back each may read its audit log (docs/api.md, "Management API"). */
export const PLANS = ["hobby", "pro", "enterprise"] as const;

export type Plan = (typeof PLANS)[number];

export const RETENTION_DAYS: Record<Plan, number> = { hobby: 7, pro: 90, enterprise: 365 };

export const DAY_MS = 86_400_000;
