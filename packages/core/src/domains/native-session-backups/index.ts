import { INSTANCE_SCOPE } from "../../ledger";
import { defineDomain } from "../types";
import { apply, finish, prepare } from "./check";
import { options, readConfig } from "./config";
import { events, onStartup } from "./events";

export const nativeSessionBackups = defineDomain({
  id: "native-session-backups",
  title: "Native session failover backups and runner evidence",
  options,
  readConfig,
  // The files are instance-wide whatever the scope: a company's requested sweep takes the
  // instance job's lock, so the two never interleave on the same session directory.
  lockKey: () => INSTANCE_SCOPE,
  onStartup,
  events,
  prepare,
  apply,
  finish,
});
