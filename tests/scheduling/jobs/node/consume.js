// A consumer that is not Python: reads keyed-job messages from a RabbitMQ queue and prints
// one JSON line per message (its arrival time, AMQP properties and parsed body), then exits.
//
//   node consume.js <amqp url> <queue> [count=1] [timeout seconds=30]
//
// The queue is asserted as the scheduler declares it (durable), so either may come first.
"use strict";

const amqp = require("amqplib");

async function main() {
  const [url, queue, count = "1", timeout = "30"] = process.argv.slice(2);
  if (!url || !queue) {
    console.error("usage: node consume.js <amqp url> <queue> [count] [timeout seconds]");
    process.exit(2);
  }
  const connection = await amqp.connect(url);
  const channel = await connection.createChannel();
  await channel.assertQueue(queue, { durable: true });
  const timer = setTimeout(() => {
    console.error(`timed out after ${timeout}s waiting for ${queue}`);
    process.exit(1);
  }, Number(timeout) * 1000);
  let seen = 0;
  await channel.consume(queue, async (message) => {
    const line = {
      received_at: new Date().toISOString(),
      content_type: message.properties.contentType,
      delivery_mode: message.properties.deliveryMode,
      body: JSON.parse(message.content.toString("utf8")),
    };
    console.log(JSON.stringify(line));
    channel.ack(message);
    seen += 1;
    if (seen >= Number(count)) {
      clearTimeout(timer);
      await channel.close();
      await connection.close();
    }
  });
  console.error(`listening on ${queue}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
