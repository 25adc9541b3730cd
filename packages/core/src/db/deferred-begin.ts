/**
 * A transaction's BEGIN travels with its first statement: one write and one round trip
 * instead of two.
 *
 * Every transaction here (a job's Prisma interactive transaction, `pgTransaction`) sends
 * `BEGIN` alone and waits for it before its first statement. On a busy host each round trip
 * costs a write, a wake-up of the backend and a read; a job's check has only three (BEGIN, the
 * lock with its claim, COMMIT). So on the pool's connections (`deferBegin`) a `BEGIN` is
 * answered at once and sent right ahead of the connection's next statement in the same write
 * (extended protocol: Parse/Bind/Execute of BEGIN, then the statement's own messages, one
 * Sync), whose results it leaves out. The server runs the two in that order, as it would
 * have one after the other: the transaction begins before the statement, which runs in it,
 * and a statement that fails leaves it aborted, as then. A COMMIT or ROLLBACK that comes
 * first ends a transaction that never ran a statement: neither is sent.
 *
 * The statement after a deferred BEGIN must be one statement (the extended protocol's rule);
 * every caller's is. Until it is sent, `getTransactionStatus()` still says idle: ask
 * `inTransaction`.
 */
import pg from "pg";

/** Connections whose BEGIN waits for their next statement. */
const pending = new WeakSet<pg.Client>();

/** What a transaction command returns (no rows): answered here for those not sent. */
const answered = (command: string) => ({ command, rowCount: null, oid: 0, fields: [], rows: [] });

type QueryConfig = { text?: string; name?: string; values?: unknown[]; submit?: unknown };

/** The text of a parameterless command, upper-cased; null for anything else. */
function commandOf(config: unknown, values: unknown): string | null {
  const text = typeof config === "string" ? config : (config as QueryConfig).text;
  if (typeof text !== "string" || (config as QueryConfig).name) return null;
  const args = Array.isArray(values) ? values : (config as QueryConfig).values;
  if (args && args.length > 0) return null;
  return text.trim().toUpperCase();
}

interface Connection {
  parse(query: { text: string; name: string; types: unknown[] }): void;
  bind(config: object): void;
  execute(config: object): void;
}
const prepareQuery = (pg.Query.prototype as unknown as { prepare(connection: Connection): void }).prepare;

/** A statement preceded, in the same pipeline, by its transaction's BEGIN. */
class AfterBegin extends pg.Query {
  /** Called by pg once, with the error or the results (node-postgres's own field). */
  callback?: (error: Error | null, results: unknown) => void;
  requiresPreparation(): boolean {
    return true;
  }
  prepare(connection: Connection): void {
    connection.parse({ text: "BEGIN", name: "", types: [] });
    connection.bind({});
    connection.execute({});
    prepareQuery.call(this, connection);
  }
}

/** Defers every BEGIN sent on `client` (a pool's connection, at its "connect"). */
export function deferBegin(client: pg.Client): void {
  const send = client.query.bind(client) as (...args: unknown[]) => unknown;
  const query = (config: unknown, values?: unknown, callback?: unknown): unknown => {
    const command = commandOf(config, values);
    const promised =
      callback === undefined &&
      typeof values !== "function" &&
      typeof (config as QueryConfig).submit !== "function";
    if (command === "BEGIN" && promised && !pending.has(client)) {
      pending.add(client);
      return Promise.resolve(answered("BEGIN"));
    }
    if (!pending.has(client)) return send(config, values, callback);
    if (!promised) {
      throw new TypeError("a statement after a deferred BEGIN is sent with a promise (deferred-begin.ts)");
    }
    pending.delete(client);
    if (command === "COMMIT" || command === "ROLLBACK") return Promise.resolve(answered(command));
    return new Promise((resolve, reject) => {
      const statement = new AfterBegin(config as pg.QueryConfig, values as unknown[] | undefined);
      statement.callback = (error: Error | null, result: unknown) => {
        // [BEGIN's, the statement's]
        if (error) reject(error);
        else resolve(Array.isArray(result) ? result.at(-1) : result);
      };
      send(statement);
    });
  };
  client.query = query as typeof client.query;
}

/** Ends a checkout: a BEGIN still waiting is forgotten (the connection never began it). */
export function forgetBegin(client: pg.Client): void {
  pending.delete(client);
}

/** Whether `client` is in a transaction block, begun or begun with its next statement. */
export function inTransaction(client: pg.Client): boolean {
  return pending.has(client) || client.getTransactionStatus() === "T";
}
