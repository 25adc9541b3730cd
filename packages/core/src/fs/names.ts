/** The one UUID pattern entries are matched against (`UUID_NAME` for a run, skill or version folder; `UUID_PATTERN` inside a larger name). */
export { UUID_NAME, UUID_PATTERN } from "@reclaim/shared";
