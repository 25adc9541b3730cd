/**
 * Structured logs: one JSON object per line on stdout, `{level, time, msg, ...fields}`.
 * Each finished job writes exactly one `job.finished` line with its report.
 */
export type LogLevel = "debug" | "info" | "warn" | "error";
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

export type LogSink = (line: string) => void;

export function createLogger(
  level: LogLevel = "info",
  base: LogFields = {},
  sink: LogSink = (line) => process.stdout.write(line + "\n"),
): Logger {
  const write = (at: LogLevel, msg: string, fields?: LogFields) => {
    if (ORDER[at] < ORDER[level]) return;
    sink(JSON.stringify({ level: at, time: new Date().toISOString(), msg, ...base, ...fields }, jsonSafe));
  };
  return {
    debug: (msg, fields) => write("debug", msg, fields),
    info: (msg, fields) => write("info", msg, fields),
    warn: (msg, fields) => write("warn", msg, fields),
    error: (msg, fields) => write("error", msg, fields),
    child: (fields) => createLogger(level, { ...base, ...fields }, sink),
  };
}

function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return Number(value);
  if (value instanceof Error)
    return { name: value.name, message: value.message, code: (value as { code?: unknown }).code };
  return value;
}

export const silentLogger: Logger = createLogger("error", {}, () => undefined);
