/**
 * The operators' dashboard: bull-board at /admin/queues over every domain's queue and the
 * callback queue. Behind the same token as the API (see auth.ts: Basic auth for browsers).
 */
import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { FastifyAdapter } from "@bull-board/fastify";
import type { Queue } from "bullmq";
import type { FastifyInstance } from "fastify";

export const DASHBOARD_PATH = "/admin/queues";

export async function registerDashboard(app: FastifyInstance, queues: Queue[]): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({ queues: queues.map((q) => new BullMQAdapter(q)), serverAdapter });
  await app.register(serverAdapter.registerPlugin(), { prefix: DASHBOARD_PATH });
}
