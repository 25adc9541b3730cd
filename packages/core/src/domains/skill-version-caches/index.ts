import { defineDomain } from "../types";
import { apply, finish, prepare } from "./check";
import { LOCKS, options, readConfig } from "./config";
import { onStartup } from "./events";

export const skillVersionCaches = defineDomain({
  id: "skill-version-caches",
  title: "Skill version caches",
  options,
  readConfig,
  // Shared with the Paperclip server's preparation and pin persistence (README.md).
  lockNamespace: LOCKS.company,
  onStartup,
  prepare,
  apply,
  finish,
});
