import { ReclaimError } from "./reclaim-error";

/** A bad environment variable; the message names it and says what is accepted. */
export class ConfigError extends ReclaimError {
  readonly variable: string;

  constructor(variable: string, message: string) {
    super("RECLAIM_ERR_CONFIG", { message: `${variable}: ${message}`, field: variable });
    this.name = "ConfigError";
    this.variable = variable;
  }
}
