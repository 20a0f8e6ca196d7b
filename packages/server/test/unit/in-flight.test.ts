import assert from 'node:assert/strict';
import { get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { createLogger } from '../../src/logger.js';
import { trackInFlight } from '../../src/plugins/in-flight.js';

/** Requests `path` and closes the connection once the handler has started. */
async function leaveEarly(app: FastifyInstance, path: string, started: Promise<unknown>): Promise<void> {
  const { port } = app.server.address() as AddressInfo;
  const client = get({ host: '127.0.0.1', port, path, agent: false });
  client.on('error', () => {});
  await started;
  client.destroy();
}

function signal(): { promise: Promise<void>; fire(): void } {
  let fire!: () => void;
  const promise = new Promise<void>((resolve) => {
    fire = resolve;
  });
  return { promise, fire };
}

test('answered requests leave nothing in flight', async () => {
  const app = Fastify();
  const inFlight = trackInFlight(app);
  app.get('/ok', async () => ({ ok: true }));
  app.get('/nothing', async (_request, reply) => {
    reply.code(204);
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  try {
    const { port } = app.server.address() as AddressInfo;
    for (const path of ['/ok', '/nothing', '/missing'])
      await (await fetch(`http://127.0.0.1:${port}${path}`)).text();
    await sleep(10); // the response's close event follows its last byte
    assert.equal(inFlight.count, 0);
    assert.equal(await inFlight.drained(0), true);
  } finally {
    await app.close();
  }
});

test('a handler whose client left is waited for by close(), whether it answers, fails or returns nothing', async () => {
  const app = Fastify();
  const inFlight = trackInFlight(app);
  const finished: string[] = [];
  const started = { answers: signal(), fails: signal(), nothing: signal(), hook: signal() };
  // The handlers go on only when released: no timing assumption on a loaded machine.
  const gate = signal();
  const slowly = async (name: keyof typeof started) => {
    started[name].fire();
    await gate.promise;
    finished.push(name);
  };
  app.get('/answers', async () => {
    await slowly('answers');
    return { ok: true };
  });
  app.get('/fails', async () => {
    await slowly('fails');
    throw new Error('late failure');
  });
  app.get('/nothing', async () => {
    await slowly('nothing');
  });
  // Replied by a hook: the handler never runs.
  app.get(
    '/hook',
    { preHandler: async (_request, reply) => reply.code(401).send(await slowly('hook')) },
    () => 'no',
  );
  await app.listen({ host: '127.0.0.1', port: 0 });
  await Promise.all(
    (Object.keys(started) as Array<keyof typeof started>).map((name) =>
      leaveEarly(app, `/${name}`, started[name].promise),
    ),
  );
  await sleep(5);
  assert.equal(inFlight.count, 4);
  let closed = false;
  const closing = app.close().then(() => {
    closed = true;
  });
  await sleep(20);
  assert.equal(closed, false, 'close() returned while the handlers were still running');
  gate.fire();
  await closing;
  assert.deepEqual(finished.sort(), ['answers', 'fails', 'hook', 'nothing']);
  assert.equal(inFlight.count, 0);
});

test('close() goes on after drainTimeoutMs when a handler does not finish, and says so', async () => {
  const warnings: string[] = [];
  const logger = createLogger('warn', { write: (line: string) => warnings.push(JSON.parse(line).msg) });
  const app = Fastify({ loggerInstance: logger as FastifyBaseLogger });
  const inFlight = trackInFlight(app, { drainTimeoutMs: 100 });
  const started = signal();
  const release = signal();
  app.get('/stuck', async () => {
    started.fire();
    await release.promise;
    return 'late';
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  await leaveEarly(app, '/stuck', started.promise);
  assert.equal(await inFlight.drained(20), false);
  const closing = performance.now();
  await app.close();
  const waited = performance.now() - closing;
  assert.ok(waited >= 90 && waited < 1000, `close waited ${Math.round(waited)} ms`);
  assert.deepEqual(warnings, ['requests still running after 100 ms; closing anyway']);
  release.fire();
  assert.equal(await inFlight.drained(1000), true);
});

test('many clients leaving early at once are each waited for, and counted out as they finish', async () => {
  const app = Fastify();
  const inFlight = trackInFlight(app);
  const gate = signal();
  let started = 0;
  const allStarted = signal();
  const clients = 50;
  app.get('/slow', async () => {
    if (++started === clients) allStarted.fire();
    await gate.promise;
    return { ok: true };
  });
  app.get('/ok', async () => ({ ok: true }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const requests = Array.from({ length: clients }, () => {
    const client = get({ host: '127.0.0.1', port, path: '/slow', agent: false });
    client.on('error', () => {});
    return client;
  });
  await allStarted.promise;
  for (const client of requests) client.destroy();
  await sleep(50);
  assert.equal(inFlight.count, clients);
  // Requests on other connections come and go meanwhile.
  await (await fetch(`http://127.0.0.1:${port}/ok`)).text();
  assert.equal(inFlight.count, clients);
  gate.fire();
  assert.equal(await inFlight.drained(2000), true);
  assert.equal(inFlight.count, 0);
  await app.close();
});

test('a response still to be written when closing begins closes its connection', async () => {
  const app = Fastify();
  trackInFlight(app);
  const started = signal();
  const release = signal();
  app.get('/slow', async () => {
    started.fire();
    await release.promise;
    return { ok: true };
  });
  app.get('/fast', async () => ({ ok: true }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const answered = (path: string) =>
    new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
      get({ host: '127.0.0.1', port, path, headers: { connection: 'keep-alive' } }, (response) => {
        response.resume();
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, connection: response.headers.connection }),
        );
      }).on('error', reject);
    });
  // Before closing: keep-alive as usual.
  assert.equal((await answered('/fast')).connection, 'keep-alive');
  const slow = answered('/slow');
  await started.promise;
  const closed = app.close();
  await sleep(20);
  release.fire();
  const answer = await slow;
  assert.equal(answer.status, 200);
  // The client opens a new connection (elsewhere) for its next request instead of reusing this one.
  assert.equal(answer.connection, 'close');
  await closed;
});
