// HTTP Toolkit's engine (mockttp) as the peer in bench/run.sh: a local server that answers every
// request with 200 from memory, keeping each one as HTTP Toolkit does, and prints the line
// bench/common.sh's port_of waits for. On SIGTERM it prints how many requests it kept and how
// many were signed POSTs, so the script can check wrk sent what it claims.
import { getLocal } from "mockttp";

const BODY = '{"received":true}';
const server = getLocal();
await server.start(0);
const rule = await server
  .forAnyRequest()
  .thenReply(200, BODY, {
    "content-type": "application/json",
    // Headers given are sent as given: without a length, each answer would end the connection.
    "content-length": String(Buffer.byteLength(BODY)),
  });
process.stderr.write(`listening on http://127.0.0.1:${server.port}\n`);
process.on("SIGTERM", async () => {
  const seen = await rule.getSeenRequests();
  const signed = seen.filter((r) => r.method === "POST" && r.headers["webhook-signature"]).length;
  process.stderr.write(`mockttp kept ${seen.length} requests, ${signed} signed POSTs\n`);
  await server.stop();
  process.exit(0);
});
