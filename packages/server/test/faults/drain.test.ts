import assert from 'node:assert/strict';
import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startServer } from '../helpers/harness.js';

/** GET `path` through `agent`; resolves with the status and headers. */
function get(
  agent: Agent,
  url: string,
  path: string,
): Promise<{ status: number; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

const idleSockets = (agent: Agent) => Object.values(agent.freeSockets).flat().length;

test('drain over real HTTP: idle keep-alive sockets close first, and a request during the drain gets 503 with Connection: close', async () => {
  const server = await startServer('sqlite');
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  // A request whose body is half sent holds the drain open.
  const held = connect(Number(new URL(server.url).port), '127.0.0.1');
  held.on('error', () => {});
  try {
    await Promise.all([1, 2, 3, 4].map(() => get(agent, server.url, '/healthz')));
    assert.equal(idleSockets(agent), 4, 'four kept-alive sockets, idle');
    const body = JSON.stringify({ oauth_token: { access_token: 'x' } });
    held.write(
      `POST /verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await sleep(100);
    const closing = server.app.close();
    await sleep(200);
    assert.equal(idleSockets(agent), 0, 'idle keep-alive sockets were left open during the drain');
    const during = await get(agent, server.url, '/healthz');
    assert.equal(during.status, 503);
    assert.equal(during.headers.connection, 'close');
    assert.equal(during.headers['retry-after'], '1');
    held.end(body.slice(5));
    await closing;
  } finally {
    held.destroy();
    agent.destroy();
    await server.storage.cleanup();
  }
});
