/** A secret's name, as the control plane takes it (and the CLI checks before asking anything). */
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export const SECRET_NAME_RULE =
  "must be 1 to 128 letters, digits or underscores, not starting with a digit";

/**
 * The runtime host's own variables in every replica, managed and custom (docs/api.md,
 * "Sandbox"): a secret of one of these names never reaches an app, so none is stored. It was
 * stored with "Stored", and its app saw the host's value.
 */
export const HOSTS_OWN = [
  "PATH",
  "HOME",
  "PWD",
  "NODE_ENV",
  "RUNLET_PROJECT",
  "RUNLET_APP",
  "RUNLET_VERSION",
];

export const hostsOwnRefusal = (name: string) =>
  `${name} is the runtime host's own variable in every replica: a secret of that name would never reach an app (the host's value wins). Choose another name`;
