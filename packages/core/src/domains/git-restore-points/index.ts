import { defineDomain } from "../types";
import { apply, finish } from "./check";
import { options, readConfig } from "./config";
import { events, onStartup } from "./events";
import { gitReopener } from "./reopen";

export const gitRestorePoints = defineDomain({
  id: "git-restore-points",
  title: "Git workspace restore points",
  options,
  readConfig,
  onStartup,
  events,
  apply,
  finish,
  reopener: gitReopener,
});

export { restorePointOptions } from "./config";
export { FRESH_WARNING } from "./reopen";
