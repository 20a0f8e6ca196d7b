import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createTesseraClient, memoryKeyStore, memoryStorage, type TesseraClient } from '@tessera/client';
import { createElement } from 'react';
import { renderToString } from 'react-dom/server';
import { startServer, type TestServer } from '../../server/test/helpers/harness.js';
import { TesseraProvider, useSession, useUser } from '../src/index.js';
import { type SessionState, SessionStore } from '../src/store.js';

let server: TestServer;
before(async () => {
  server = await startServer('sqlite');
});
after(async () => {
  await server.close();
});

const clientFor = (): TesseraClient =>
  createTesseraClient({
    issuer: server.url,
    apiKeyId: server.project.api_key_id,
    storage: memoryStorage(),
    keyStore: memoryKeyStore(),
    channel: null,
  });

function Status() {
  const { status } = useSession();
  const user = useUser();
  return createElement('p', null, `${status}:${user?.identifier ?? '-'}`);
}

test('server rendering uses the initial session (signed in, signed out, unknown)', () => {
  const client = clientFor();
  const render = (initialSession?: Parameters<typeof TesseraProvider>[0]['initialSession']) =>
    renderToString(createElement(TesseraProvider, { client, initialSession }, createElement(Status)));
  const user = {
    id: 'usr_1',
    clientUserId: 'usr_1',
    identifier: 'ada@example.com',
    authMethod: 'OTP' as const,
  };
  assert.equal(render({ user }), '<p>signedIn:ada@example.com</p>');
  assert.equal(render(null), '<p>signedOut:-</p>');
  assert.equal(render(), '<p>loading:-</p>');
  client.close();
});

test('hooks outside the provider fail with a clear message', () => {
  assert.throws(
    () => renderToString(createElement(Status)),
    /useSession\(\) must be used inside <TesseraProvider>/,
  );
});

test('the store keeps the server snapshot for hydration, then follows the real client', async () => {
  const client = clientFor();
  const store = new SessionStore(client, null);
  const seen: SessionState['status'][] = [];
  store.subscribe(() => seen.push(store.getSnapshot().status));
  const stop = store.start();
  const { challengeId } = await client.otp.start('hooks@example.com');
  await client.otp.complete(challengeId, server.lastCode('hooks@example.com'));
  const signedIn = store.getSnapshot();
  assert.equal(signedIn.status, 'signedIn');
  assert.equal(signedIn.user?.identifier, 'hooks@example.com');
  assert.equal(store.getServerSnapshot().status, 'signedOut', 'the server snapshot never changes');
  assert.equal(store.getSnapshot(), signedIn, 'snapshots are stable between changes');
  await client.logout();
  assert.equal(store.getSnapshot().status, 'signedOut');
  assert.deepEqual(seen, ['signedIn', 'signedOut']);
  stop();
  client.close();
});
