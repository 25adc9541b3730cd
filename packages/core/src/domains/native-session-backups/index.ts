import { defineDomain } from "../types";
import { apply, finish, prepare } from "./check";
import { options, readConfig } from "./config";
import { events, onStartup } from "./events";

export const nativeSessionBackups = defineDomain({
  id: "native-session-backups",
  title: "Native session failover backups and runner evidence",
  options,
  readConfig,
  onStartup,
  events,
  prepare,
  apply,
  finish,
});
