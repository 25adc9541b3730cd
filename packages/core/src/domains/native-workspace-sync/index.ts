import { defineDomain } from "../types";
import { apply, finish, prepare } from "./check";
import { options, readConfig } from "./config";
import { events, onStartup } from "./events";

export const nativeWorkspaceSync = defineDomain({
  id: "native-workspace-sync",
  title: "Native workspace sync folders",
  options,
  readConfig,
  onStartup,
  events,
  prepare,
  apply,
  finish,
});
