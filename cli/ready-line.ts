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
 * outside the checkout it goes there first; and wherever it was started, it names a home that is
 * not the checkout's own.
 */
export function readyLine(cwd: string, root: string, home: string): string {
  const steps: string[] = [];
  if (resolve(cwd) !== resolve(root)) steps.push(`cd ${shellWord(resolve(root))}`);
  // Inside the checkout too: the README's second terminal has no RUNLET_HOME, and its npx runlet
  // read the checkout's own .runlet (another stack's, or none: "no Runlet credentials").
  if (resolve(home) !== join(resolve(root), ".runlet"))
    steps.push(`export RUNLET_HOME=${shellWord(resolve(home))}`);
  return `Runlet is ready. Try: ${[...steps, TRY].join(" && ")}`;
}
