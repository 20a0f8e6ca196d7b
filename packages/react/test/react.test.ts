import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  createTesseraClient,
  memoryKeyStore,
  memoryStorage,
  type SignInResult,
  type TesseraClient,
  TesseraClientError,
  type TokenStorage,
} from '@tessera/client';
import { createElement } from 'react';
import { renderToString } from 'react-dom/server';
import { RELAXED_LIMITS, startServer, type TestServer } from '../../server/test/helpers/harness.js';
import { signInMethods, tracked } from '../src/hooks.js';
import {
  type SignIn,
  type SignOut,
  TesseraProvider,
  useSession,
  useSignIn,
  useTesseraClient,
  useUser,
} from '../src/index.js';
import { type SessionState, SessionStore } from '../src/store.js';

let server: TestServer;
before(async () => {
  server = await startServer('sqlite', { env: RELAXED_LIMITS });
});
after(async () => {
  await server.close();
});

const clientFor = (
  storage: TokenStorage = memoryStorage(),
  fetch: typeof globalThis.fetch = globalThis.fetch,
): TesseraClient =>
  createTesseraClient({
    issuer: server.url,
    apiKeyId: server.project.api_key_id,
    storage,
    keyStore: memoryKeyStore(),
    channel: null,
    fetch,
  });

async function signIn(client: TesseraClient, identifier: string): Promise<void> {
  const { challengeId } = await client.otp.start(identifier);
  await client.otp.complete(challengeId, server.lastCode(identifier));
}

/** The next change the store reports. */
const nextChange = (store: SessionStore) =>
  new Promise<SessionState>((resolve) => {
    const off = store.subscribe(() => {
      off();
      resolve(store.getSnapshot());
    });
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

test('the store takes the stored session from initialSession, without a network call', async () => {
  const storage = memoryStorage();
  const first = clientFor(storage);
  await signIn(first, 'initial@example.com');
  const claims = await first.getClaims();
  first.close();
  let calls = 0;
  const counting: typeof globalThis.fetch = (input, init) => {
    calls++;
    return globalThis.fetch(input, init);
  };
  const client = clientFor(storage, counting);
  const user = {
    id: claims!.sub,
    clientUserId: claims!.sub,
    identifier: 'initial@example.com',
    authMethod: 'OTP' as const,
  };
  const store = new SessionStore(client, { user });
  const server = store.getServerSnapshot();
  const changed = nextChange(store);
  const stop = store.start();
  assert.equal(
    store.getSnapshot(),
    server,
    'nothing changes synchronously: hydration still sees the server snapshot',
  );
  const state = await changed;
  assert.equal(state.status, 'signedIn');
  assert.equal(state.claims?.jti, claims!.jti, 'the stored access token, not a renewed one');
  assert.equal(calls, 0, 'the initial session comes from storage');
  assert.equal(store.getServerSnapshot(), server);
  stop();
  client.close();
});

test('a server that rendered signed in is corrected by an empty initialSession', async () => {
  const client = clientFor();
  const user = {
    id: 'usr_1',
    clientUserId: 'usr_1',
    identifier: 'gone@example.com',
    authMethod: 'OTP' as const,
  };
  const store = new SessionStore(client, { user });
  const changed = nextChange(store);
  const stop = store.start();
  assert.equal((await changed).status, 'signedOut');
  stop();
  client.close();
});

let takenSignOut: SignOut | undefined;
function TakeSignOut() {
  takenSignOut = useSession().signOut;
  return null;
}

/** Renders a provider on the server just to take `useSession().signOut` out of it. */
function signOutOf(client: TesseraClient): SignOut {
  renderToString(
    createElement(TesseraProvider, { client, initialSession: null }, createElement(TakeSignOut)),
  );
  return takenSignOut!;
}

test("useSession().signOut passes the logout scope; a click event means 'local'", async () => {
  const identifier = 'scopes@example.com';
  const here = clientFor();
  const elsewhere = clientFor();
  await signIn(elsewhere, identifier);
  await signIn(here, identifier);
  const verify = async (client: TesseraClient) => {
    const answer = await server.request('POST', '/verify', {
      body: { oauth_token: { access_token: (await client.getAccessToken()) ?? 'signed-out' } },
      headers: { api_key_id: server.project.api_key_id },
    });
    return answer.body.success as boolean;
  };
  const signOut = signOutOf(here);
  const others = await signOut('others');
  assert.deepEqual(others, { revoked: true, sessionsRevoked: 1 });
  assert.equal(await verify(here), true, "'others' keeps this session");
  assert.equal(await verify(elsewhere), false, "'others' ends the other device's session");
  const clickEvent = { type: 'click' } as unknown as Parameters<SignOut>[0];
  assert.deepEqual(await signOut(clickEvent), { revoked: true });
  assert.equal(await here.isSignedIn(), false);
  here.close();
  elsewhere.close();
});

/** A passkeys look-alike whose autofill waits until its signal aborts (as browsers do). */
function fakePasskeys(supported: boolean) {
  const signals: AbortSignal[] = [];
  const passkeys = {
    browserSupportsAutofill: async () => supported,
    signInWithAutofill: (options: { signal?: AbortSignal } = {}) =>
      new Promise<SignInResult>((_resolve, reject) => {
        signals.push(options.signal!);
        options.signal!.addEventListener('abort', () =>
          reject(new TesseraClientError('webauthn_cancelled', 'the passkey prompt was cancelled')),
        );
      }),
    signIn: async () => ({ userId: 'usr_1', authMethod: 'BIOMETRIC', tokensStored: true }) as SignInResult,
  };
  return { passkeys: passkeys as unknown as TesseraClient['passkeys'], signals };
}

test('passkey({ autofill: true }) waits in the autofill, ends quietly when aborted, null when unsupported', async () => {
  const errors: unknown[] = [];
  const run = <T>(call: () => Promise<T>) => call();
  const fake = fakePasskeys(true);
  const autofills = new Set<AbortController>();
  const client = { ...clientFor(), passkeys: fake.passkeys };
  const { passkey } = signInMethods(client, run, autofills, (e) => errors.push(e));

  const waiting = passkey({ autofill: true });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(autofills.size, 1, 'the pending autofill is held for unmount');
  for (const controller of autofills) controller.abort(); // what unmounting does
  assert.equal(await waiting, null);
  assert.equal(fake.signals[0]!.aborted, true);
  assert.equal(autofills.size, 0);

  const mine = new AbortController();
  const second = passkey({ autofill: true, signal: mine.signal });
  await new Promise((resolve) => setImmediate(resolve));
  mine.abort();
  assert.equal(await second, null, "the caller's signal ends it too");
  assert.deepEqual(errors, [], 'a cancelled autofill is not an error to show');
  assert.equal((await passkey()).authMethod, 'BIOMETRIC', 'without autofill: the modal prompt');

  const unsupported = signInMethods(
    { ...client, passkeys: fakePasskeys(false).passkeys },
    run,
    autofills,
    () => {},
  );
  assert.equal(await unsupported.passkey({ autofill: true }), null);
  client.close();
});

let taken: TesseraClient | undefined;
let takenSignIn: SignIn | undefined;
function Take() {
  taken = useTesseraClient();
  takenSignIn = useSignIn();
  return null;
}

test("useTesseraClient() gives the provider's client (for passkey registration, …); outside it, a clear error", async () => {
  const client = clientFor();
  renderToString(createElement(TesseraProvider, { client, initialSession: null }, createElement(Take)));
  assert.equal(taken, client);
  assert.equal(typeof taken!.passkeys.register, 'function');
  // The error's type is the SDK's: its code and retryAfter are there without a cast.
  const error: TesseraClientError | null = takenSignIn!.error;
  assert.equal(error?.code, undefined);
  assert.throws(
    () => renderToString(createElement(Take)),
    /useTesseraClient\(\) must be used inside <TesseraProvider>/,
  );
  client.close();
});

test("useSignIn's error is the SDK's error: a service refusal as it is, anything else as internal_error", async () => {
  const pending: boolean[] = [];
  const errors: Array<TesseraClientError | null> = [];
  const run = tracked(
    (p) => pending.push(p),
    (e) => errors.push(e),
  );
  const client = clientFor();
  const { challengeId } = await run(() => client.otp.start('typed@example.com'));
  const code = server.lastCode('typed@example.com');
  const refused = await run(() =>
    client.otp.complete(challengeId, code === '000000' ? '111111' : '000000'),
  ).then(
    () => assert.fail('a wrong code signs nobody in'),
    (failure: unknown) => failure,
  );
  const shown = errors.at(-1)!;
  assert.equal(shown, refused, 'the SDK error itself');
  assert.equal(shown.code, 'invalid_code');

  const bug = new TypeError('boom');
  await assert.rejects(
    run(() => Promise.reject(bug)),
    (e) => e === bug,
  );
  const wrapped = errors.at(-1)!;
  assert.ok(wrapped instanceof TesseraClientError);
  assert.equal(wrapped.code, 'internal_error');
  assert.equal(wrapped.cause, bug);
  assert.deepEqual(errors.slice(0, 2), [null, null], 'each call clears the last error first');
  assert.deepEqual(pending, [true, false, true, false, true, false]);
  client.close();
});
