/** Project and app names as they appear in the host's URLs and on its disk. */
export const NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

export function isValidName(value: string): boolean {
  return NAME_PATTERN.test(value);
}

/** The key of an app across the host: `project/app`. */
export function appKey(project: string, app: string): string {
  return `${project}/${app}`;
}
