/**
 * One bucket per test file on the S3 test server, emptied and removed by `remove()`
 * (objects and unfinished multipart uploads), so runs leave nothing on the gateway.
 */
import { randomBytes } from "node:crypto";
import { Client } from "minio";
import { testS3Server, type TestS3Server } from "./rgw";

export interface TestBucket {
  name: string;
  server: TestS3Server;
  client: Client;
  remove(): Promise<void>;
}

export async function createTestBucket(): Promise<TestBucket> {
  const server = testS3Server();
  const url = new URL(server.endpoint);
  const client = new Client({
    endPoint: url.hostname,
    port: Number(url.port),
    useSSL: url.protocol === "https:",
    accessKey: server.accessKey,
    secretKey: server.secretKey,
    region: server.region,
    pathStyle: true,
  });
  const name = `reclaim-test-${randomBytes(6).toString("hex")}`;
  await client.makeBucket(name, server.region);
  return {
    name,
    server,
    client,
    async remove() {
      for await (const upload of client.listIncompleteUploads(name, "", true)) {
        await client.abortMultipartUpload(name, upload.key, upload.uploadId);
      }
      const names: string[] = [];
      for await (const item of client.listObjectsV2(name, "", true)) if (item.name) names.push(item.name);
      if (names.length) await client.removeObjects(name, names);
      await client.removeBucket(name);
    },
  };
}
