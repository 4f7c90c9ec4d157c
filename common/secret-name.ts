/** A secret's name, as the control plane takes it (and the CLI checks before asking anything). */
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export const SECRET_NAME_RULE =
  "must be 1 to 128 letters, digits or underscores, not starting with a digit";
