/**
 * The run API's 502s that come before a run is made, or before its call reached a runtime host,
 * in the Worker's words: `runlet run` reads them to tell whether a run stands behind a failed
 * call's id, and whether it has logs (cli/commands/run-made.ts). Written once, here, so the words
 * the CLI looks for are the ones the Worker answers.
 */

/** The control plane could not be asked (for a token's keys, an app): no run was made. */
export const CONTROL_PLANE_UNREACHABLE = "the control plane is not reachable";

/** The control plane answered an error where the Worker needed its answer: no run was made. */
export const CONTROL_PLANE_ANSWERED = "the control plane answered";
export const controlPlaneAnswered = (status: number) => `${CONTROL_PLANE_ANSWERED} ${status}`;

/** Put before either when it was the token's check that failed. */
export const CANNOT_VERIFY = "cannot verify tokens: ";

/** No host the call was placed on could be connected to: it was not sent, so it did not run. */
export const NO_HOST_REACHED = "no runtime host could be reached";
export const notSent = (error: string) =>
  `${NO_HOST_REACHED}: ${error}; the call was not sent, so it did not run. Try again shortly`;

/**
 * No host takes work: the registry has each down, stopping or drained (and no fallback is set).
 * A 502, as every failure to reach a host is (a host's own 503 is a 502 too): DESIGN.md's run
 * API answers a host's failures 502, and lists no 503 for them.
 */
export const NO_HOST =
  "no runtime host is up to take the call (each is down, stopping or drained by an operator); try again shortly";
