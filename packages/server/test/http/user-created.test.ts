import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { test } from 'node:test';
import { decodeJwt } from 'jose';
import {
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';

/** A webhook receiver on loopback that keeps the event types it was sent. */
async function startReceiver(): Promise<{ url: string; types: string[]; close(): Promise<void> }> {
  const types: string[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      types.push(JSON.parse(Buffer.concat(chunks).toString('utf8')).type);
      response.statusCode = 204;
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    types,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function pendingDeliveries(server: TestServer): Promise<number> {
  const rows = await server.storage.db.kysely
    .selectFrom('webhook_deliveries')
    .select('status')
    .where('status', '=', 'pending')
    .execute();
  return rows.length;
}

eachDialect('user.created', (dialect) => {
  test('parallel first sign-ins of one identifier record user.created exactly once, and webhooks receive it', async () => {
    const receiver = await startReceiver();
    const server = await startServer(dialect, {
      env: { ...RELAXED_LIMITS, TESSERA_WEBHOOK_BACKOFF: '0' },
    });
    try {
      const auth = { authorization: basicAuth(server.project) };
      const hook = await server.request('POST', '/v1/webhooks', {
        body: { url: receiver.url, event_types: ['user.created'] },
        headers: auth,
      });
      assert.equal(hook.status, 201, hook.text);

      const email = uniqueEmail('created');
      const headers = { api_key_id: server.project.api_key_id };
      // Several challenges for the same new identifier, completed at once: each right code signs
      // in, but only one of them creates the user.
      const challenges: Array<{ id: string; code: string }> = [];
      for (let i = 0; i < 6; i++) {
        const started = await server.request('POST', '/v1/auth/otp/start', {
          body: { identifier: email },
          headers,
        });
        assert.equal(started.status, 200, started.text);
        challenges.push({ id: started.body.challenge_id, code: server.lastCode(email) });
      }
      const done = await Promise.all(
        challenges.map((c) =>
          server.request('POST', '/v1/auth/otp/complete', {
            body: { challenge_id: c.id, code: c.code, getOAuthToken: true },
            headers,
          }),
        ),
      );
      for (const response of done) assert.equal(response.status, 200, response.text);
      const userIds = new Set(done.map((r) => decodeJwt(r.body.oauth_token.access_token).sub));
      assert.equal(userIds.size, 1, 'every sign-in reached the same user');

      // A later sign-in of the same user creates nothing.
      await server.signIn(email);

      const audit = await server.request('GET', '/v1/audit?type=user.created', { headers: auth });
      assert.equal(audit.status, 200, audit.text);
      const created = audit.body.events.filter((e: { type: string }) => e.type === 'user.created');
      assert.equal(created.length, 1, audit.text);
      assert.equal(created[0].user_id, [...userIds][0]);
      assert.deepEqual(created[0].data, { method: 'OTP', identifier_type: 'email' });
      assert.ok(!audit.text.includes(email), 'the event does not carry the identifier');

      // A second user is a second sign-up.
      await server.signIn(uniqueEmail('created'));
      const deadline = Date.now() + 20_000;
      while ((receiver.types.length < 2 || (await pendingDeliveries(server)) > 0) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.deepEqual(receiver.types, ['user.created', 'user.created']);
    } finally {
      await server.close();
      await receiver.close();
    }
  });
});
