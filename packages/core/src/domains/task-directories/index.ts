import { defineDomain } from "../types";
import { apply, finish, prepare } from "./check";
import { options, readConfig } from "./config";
import { events, onStartup } from "./events";
import { taskDirectoryReopener } from "./reopen";

export const taskDirectories = defineDomain({
  id: "task-directories",
  title: "Isolated task directories",
  options,
  readConfig,
  onStartup,
  events,
  prepare,
  apply,
  finish,
  reopener: taskDirectoryReopener,
});
