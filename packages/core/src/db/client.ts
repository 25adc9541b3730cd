/**
 * The Prisma client, over node-postgres through @prisma/adapter-pg (Prisma 6 "client"
 * engine: no native query engine binary, see ../shared/notes/toolchain.md).
 */
import { PrismaPg } from "@prisma/adapter-pg";
import { Prisma, PrismaClient } from "./generated/client";

export { Prisma, PrismaClient };
export type Db = PrismaClient;
/** What a check receives inside the job's interactive transaction. */
export type Tx = Prisma.TransactionClient;

export interface DbOptions {
  /** Pool size; every concurrent job holds one connection for its transaction. */
  max?: number;
}

export function createDb(databaseUrl: string, options: DbOptions = {}): Db {
  const adapter = new PrismaPg({
    connectionString: databaseUrl,
    max: options.max ?? 10,
    // Fail fast when PostgreSQL is down instead of queueing forever; BullMQ retries the job.
    connectionTimeoutMillis: 5000,
  });
  return new PrismaClient({ adapter, transactionOptions: { maxWait: 10_000, timeout: 120_000 } });
}
