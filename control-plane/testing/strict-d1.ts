/**
 * D1 as production runs it, in one respect its local form does not: a statement binds at most
 * 100 parameters (Cloudflare's D1 limits). Drizzle writes each parameter as `?`, so a statement
 * with more is refused here, as D1 would refuse it, where workerd's local D1 takes it.
 */
export const D1_MAX_PARAMETERS = 100;

export function strictD1(db: D1Database): D1Database {
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") {
        return (query: string) => {
          const params = query.match(/\?/g)?.length ?? 0;
          if (params > D1_MAX_PARAMETERS)
            throw new Error(
              `D1 binds at most ${D1_MAX_PARAMETERS} parameters to a statement; this one has ${params}: ${query.slice(0, 120)}`,
            );
          return target.prepare(query);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
