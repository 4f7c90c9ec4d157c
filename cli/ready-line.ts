import { join, resolve } from "node:path";

const TRY = `npx runlet deploy examples/hello && npx runlet run hello --data '{"name":"Ada"}'`;

/** A path as one shell word: as it is when it needs no quotes, else in single quotes. */
function shellWord(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replaceAll("'", `'\\''`)}'`;
}

/**
 * `runlet start`'s last line, with a first command that works where the person is. Its `npx
 * runlet` is this checkout's CLI only inside the checkout: started elsewhere (RUNLET_HOME in
 * /srv, a shell in /tmp), the line sent them to npx, which then runs the npm registry's package
 * of that name, anybody's (README, "Quick start"), with `examples/hello` not there either. So
 * outside the checkout it goes there first, and names a home that is not the checkout's own.
 */
export function readyLine(cwd: string, root: string, home: string): string {
  if (resolve(cwd) === resolve(root)) return `Runlet is ready. Try: ${TRY}`;
  const steps = [`cd ${shellWord(resolve(root))}`];
  if (resolve(home) !== join(resolve(root), ".runlet"))
    steps.push(`export RUNLET_HOME=${shellWord(resolve(home))}`);
  return `Runlet is ready. Try: ${[...steps, TRY].join(" && ")}`;
}
