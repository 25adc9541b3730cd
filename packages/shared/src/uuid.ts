/**
 * A canonical lowercase UUID, as `randomUUID` writes it and Paperclip stores its ids: company
 * ids in storage keys, run folders, skill and version folders, the suffix of a retired name.
 * The one copy of the pattern; compose it (`new RegExp(\`^x-${UUID_PATTERN}$\`)`) rather than
 * writing another.
 */
export const UUID_PATTERN = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

/** The whole string is such a UUID (a run folder's name, a company id). */
export const UUID_NAME = new RegExp(`^${UUID_PATTERN}$`);
