import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { after, before, test } from 'node:test';
import pg from 'pg';
import type { Project } from '../../src/modules/projects/project.js';
import { clientFingerprint } from '../../src/modules/session/session.service.js';
import { describePostgres, RELAXED_LIMITS, startServer, type TestServer } from '../helpers/harness.js';
import {
  authorizeUrl,
  Browser,
  pkce,
  redirectParams,
  registerClient,
  signInOnHostedPages,
} from '../helpers/oidc.js';

/**
 * A rotation's time as the grant's `now`: PostgreSQL stamps the grant's start plus the few ms its
 * statement waited before it had its row (session.repository.ts, `tookEffect`).
 */
const atGrant = (at: number | null | undefined, start: number) =>
  typeof at === 'number' && at >= start && at < start + 5000 ? start : at;

/**
 * Every statement a piece of work sends to PostgreSQL: each `query` of a node-postgres client is one
 * round trip (BEGIN and COMMIT included). Only queries made from inside `statementsOf`'s async
 * context count, so the server's timers (revocation polls, webhook dispatch) do not.
 */
const scope = new AsyncLocalStorage<Sent[]>();

interface Sent {
  text: string;
  /** Sent as a named prepared statement. */
  named: boolean;
}

const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const [first] = args;
  const config =
    typeof first === 'object' && first !== null ? (first as { text?: string; name?: string }) : {};
  scope.getStore()?.push({
    text: typeof first === 'string' ? first : String(config.text),
    named: typeof config.name === 'string',
  });
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;

async function statementsOf<T>(work: () => Promise<T>): Promise<{ result: T; sent: Sent[] }> {
  const sent: Sent[] = [];
  const result = await scope.run(sent, work);
  return { result, sent };
}

const describeIt = (sent: Sent[]) =>
  sent
    .map((s, i) => `${i + 1}. ${s.named ? '(named) ' : ''}${s.text.replace(/\s+/g, ' ').slice(0, 90)}`)
    .join('\n');

// The hot paths on PostgreSQL (issue 9): a refresh grant and an OTP completion in at most two round
// trips each (before: 7 and 15). Measured on the services, as the routes call them.
describePostgres('round trips of the hot paths [postgres]', () => {
  let server: TestServer;
  let project: Project;
  const network = '192.0.2.1';
  const fingerprint = clientFingerprint(network, 'test');
  // `ticking`: each reading of the clock is a millisecond later (to see the order of stamps).
  const clock = { t: Date.now(), ticking: false, now: () => (clock.ticking ? ++clock.t : clock.t) };

  before(async () => {
    server = await startServer('postgres', { env: RELAXED_LIMITS, now: clock.now });
    const found = await server.ctx.projects.byApiKeyId(server.project.api_key_id);
    assert.ok(found);
    project = found;
    // Warm what a running server has warm: the project and the webhook subscriptions (both
    // cached), and each connection's prepared statements.
    for (let i = 0; i < 3; i++) await signIn(`warm${i}@example.com`, true);
  });
  after(() => server?.close());

  async function challenge(identifier: string) {
    const started = await server.ctx.otp.start(project, identifier, network);
    return { id: started.challenge_id, code: server.lastCode(identifier) };
  }

  async function signIn(identifier: string, getOAuthToken: boolean) {
    const { id, code } = await challenge(identifier);
    return server.ctx.otp.complete(project, id, code, getOAuthToken, network);
  }

  test('an OTP start: one (its windows in three steps with the challenge and its event)', async () => {
    const sentEvents = () =>
      server.storage.db.kysely
        .selectFrom('audit_events')
        .select(['id', 'type', 'data', 'user_id'])
        .where('project_id', '=', project.id)
        .where('type', '=', 'otp.sent')
        .execute();
    const before = new Set((await sentEvents()).map((e) => e.id));
    const { result, sent } = await statementsOf(() =>
      server.ctx.otp.start(project, 'start@example.com', network),
    );
    assert.ok(result.challenge_id);
    assert.equal(sent.length, 1, `${sent.length} round trips:\n${describeIt(sent)}`);
    assert.ok(
      sent.every((s) => s.named),
      `named prepared statements:\n${describeIt(sent)}`,
    );
    const added = async () =>
      (await sentEvents()).filter((e) => !before.has(e.id)).map(({ id: _, ...event }) => event);
    assert.deepEqual(await added(), [{ type: 'otp.sent', data: '{"channel":"email"}', user_id: null }]);
  });

  /** The rows an OTP sign-in stored beside its user: its events, session, tokens and challenge. */
  async function storedBy(challengeId: string, userId: string) {
    const { kysely } = server.storage.db;
    const events = await kysely
      .selectFrom('audit_events')
      .select(['type', 'data', 'project_id', 'ip'])
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .orderBy('type', 'desc')
      .execute();
    const sessions = await kysely.selectFrom('sessions').selectAll().where('user_id', '=', userId).execute();
    const challenge = await kysely
      .selectFrom('otp_challenges')
      .select(['consumed_at', 'expires_at', 'attempts'])
      .where('id', '=', challengeId)
      .executeTakeFirst();
    return { events, sessions, challenge };
  }

  test('an OTP completion with tokens: one statement (the guess stores the whole sign-in)', async () => {
    const { id, code } = await challenge('count@example.com');
    const { result, sent } = await statementsOf(() =>
      server.ctx.otp.complete(project, id, code, true, network),
    );
    assert.ok('oauth_token' in result);
    assert.equal(sent.length, 1, `${sent.length} round trips:\n${describeIt(sent)}`);
    assert.ok(sent[0]!.named, `a named prepared statement:\n${describeIt(sent)}`);
    // What the sign-in's own statement stored before: the user's two events, its session and
    // first refresh token, and the challenge closed (it cannot be finished again).
    const { sid, sub } = JSON.parse(
      Buffer.from(result.oauth_token.access_token.split('.')[1]!, 'base64url').toString(),
    );
    const { events, sessions, challenge: row } = await storedBy(id, sub);
    assert.deepEqual(events, [
      {
        type: 'user.created',
        data: '{"method":"OTP","identifier_type":"email"}',
        project_id: project.id,
        ip: null,
      },
      { type: 'signin.succeeded', data: '{"method":"OTP"}', project_id: project.id, ip: null },
    ]);
    assert.equal(sessions.length, 1);
    assert.equal(sessions[0]!.id, sid);
    assert.equal(sessions[0]!.auth_method, 'OTP');
    assert.equal(sessions[0]!.auth_time, clock.t);
    assert.equal(sessions[0]!.expires_at - sessions[0]!.created_at, 30 * 24 * 3600 * 1000);
    assert.equal(sessions[0]!.revoked_at, null);
    assert.deepEqual(row, { consumed_at: clock.t, expires_at: clock.t, attempts: 1 });
    // Its refresh token is genuine and names the session (checked without a grant).
    const refresh = await server.ctx.session.verifyRefreshToken(result.oauth_token.refresh_token);
    assert.equal(refresh?.session.id, sid);
    assert.equal(refresh?.token.rotated_at, null);
    // Finished once: the same code again is a used code, and nothing more is stored.
    await assert.rejects(server.ctx.otp.complete(project, id, code, true, network), /already been used/);
    assert.equal((await storedBy(id, sub)).sessions.length, 1);
  });

  test('the one statement stamps its events in the order the two-statement path records them', async () => {
    const phone = '+14155550123';
    const { kysely } = server.storage.db;
    const typesOf = async (userId: string) =>
      (
        await kysely
          .selectFrom('audit_events')
          .select(['type', 'created_at'])
          .where('user_id', '=', userId)
          .orderBy('created_at')
          .execute()
      ).map((e) => e.type);
    clock.ticking = true;
    try {
      const created = await signIn(phone, true);
      assert.ok('oauth_token' in created);
      const { sub } = JSON.parse(
        Buffer.from(created.oauth_token.access_token.split('.')[1]!, 'base64url').toString(),
      );
      assert.deepEqual(await typesOf(sub), ['user.created', 'signin.succeeded']);
      await kysely
        .insertInto('pins')
        .values({ user_id: sub, hash: 'x', failed_attempts: 5, locked_at: clock.t, updated_at: clock.t })
        .execute();
      const again = await signIn(phone, true);
      assert.ok('oauth_token' in again);
      assert.deepEqual(await typesOf(sub), [
        'user.created',
        'signin.succeeded',
        'pin.unlocked',
        'signin.succeeded',
      ]);
    } finally {
      clock.ticking = false;
    }
  });

  test('a right code finished again by a request whose clock came first is used, and moves no sign-in time back', async () => {
    const { id, code } = await challenge('clock@example.com');
    const signedIn = await server.ctx.otp.complete(project, id, code, true, network);
    assert.ok('oauth_token' in signedIn);
    const { sub } = JSON.parse(
      Buffer.from(signedIn.oauth_token.access_token.split('.')[1]!, 'base64url').toString(),
    );
    const lastSignIn = async () =>
      (
        await server.storage.db.kysely
          .selectFrom('users')
          .select('last_sign_in_at')
          .where('id', '=', sub)
          .executeTakeFirstOrThrow()
      ).last_sign_in_at;
    assert.equal(await lastSignIn(), clock.t);
    // A request that read the clock just before the winner's, answered after it: the challenge is
    // closed, not a sign-in to resume (its user's last sign-in is not moved back).
    clock.t -= 10;
    try {
      await assert.rejects(server.ctx.otp.complete(project, id, code, true, network), /already been used/);
      assert.equal(await lastSignIn(), clock.t + 10);
    } finally {
      clock.t += 10;
    }
  });

  test('a returning user by SMS: one statement, no user.created, its PIN lock lifted with it', async () => {
    const phone = '+14155552671';
    const first = await signIn(phone, false);
    assert.ok('user_id' in first);
    const { events } = await storedBy('', first.user_id);
    assert.equal(events[0]?.data, '{"method":"OTP","identifier_type":"phone"}');
    await server.storage.db.kysely
      .insertInto('pins')
      .values({
        user_id: first.user_id,
        hash: 'x',
        failed_attempts: 5,
        locked_at: clock.t,
        updated_at: clock.t,
      })
      .execute();
    clock.t += 1000;
    const { id, code } = await challenge(phone);
    const { result, sent } = await statementsOf(() =>
      server.ctx.otp.complete(project, id, code, true, network),
    );
    assert.ok('oauth_token' in result);
    // One statement: the PIN's failures are cleared, and the lock's lift recorded, with the sign-in.
    assert.equal(sent.length, 1, `${sent.length} round trips:\n${describeIt(sent)}`);
    const after = await storedBy(id, first.user_id);
    assert.deepEqual(
      after.events.map((e) => e.type),
      ['user.created', 'signin.succeeded', 'signin.succeeded', 'pin.unlocked'],
    );
    assert.equal(after.sessions.length, 1);
    const pin = await server.storage.db.kysely
      .selectFrom('pins')
      .select(['failed_attempts', 'locked_at'])
      .where('user_id', '=', first.user_id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(pin, { failed_attempts: 0, locked_at: null });
  });

  test('an OTP completion without tokens: one statement; a wrong code: at most two', async () => {
    const { id, code } = await challenge('no-tokens@example.com');
    const wrong = code === '000000' ? '111111' : '000000';
    const refused = await statementsOf(() =>
      server.ctx.otp.complete(project, id, wrong, false, network).catch((error: unknown) => error),
    );
    assert.equal((refused.result as { statusCode?: number }).statusCode, 400);
    assert.ok(refused.sent.length <= 2, `${refused.sent.length} round trips:\n${describeIt(refused.sent)}`);
    const { result, sent } = await statementsOf(() =>
      server.ctx.otp.complete(project, id, code, false, network),
    );
    assert.ok('user_id' in result);
    assert.equal(sent.length, 1, `${sent.length} round trips:\n${describeIt(sent)}`);
    const { events, sessions, challenge: row } = await storedBy(id, result.user_id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['user.created', 'signin.succeeded'],
    );
    assert.equal(sessions.length, 0);
    assert.deepEqual(row, { consumed_at: clock.t, expires_at: clock.t, attempts: 2 });
  });

  test('a refresh grant of a current token: one statement (it checks, rotates and records at once)', async () => {
    const first = await signIn('refresh@example.com', true);
    assert.ok('oauth_token' in first);
    const warm = await server.ctx.session.refresh(project, first.oauth_token.refresh_token, fingerprint);
    const { result, sent } = await statementsOf(() =>
      server.ctx.session.refresh(project, warm.refresh_token, fingerprint),
    );
    assert.ok(result.access_token);
    assert.equal(sent.length, 1, `${sent.length} round trips:\n${describeIt(sent)}`);
    assert.ok(
      sent.every((s) => s.named),
      `every statement is a named prepared statement:\n${describeIt(sent)}`,
    );
    // The rotation and its event were stored: the new token works, the event is there.
    const events = await server.storage.db.kysely
      .selectFrom('audit_events')
      .select(['type', 'user_id', 'data', 'project_id'])
      .where('type', '=', 'refresh')
      .execute();
    assert.equal(events.length, 2);
    const { sid } = JSON.parse(Buffer.from(result.access_token.split('.')[1]!, 'base64url').toString());
    const session = await server.ctx.sessions.findById(sid);
    assert.ok(session);
    const [listed] = await server.ctx.sessions.listByUser(session.user_id);
    assert.equal(atGrant(listed?.last_refreshed_at, clock.t), clock.t);
    for (const event of events) {
      assert.equal(event.user_id, session.user_id);
      assert.equal(event.project_id, project.id);
      assert.deepEqual(JSON.parse(event.data), { session_id: sid });
    }
    const next = await server.ctx.session.refresh(project, result.refresh_token, fingerprint);
    assert.ok(next.access_token);
  });

  test('parallel grants share one read of the webhook subscriptions when its cache has expired', async () => {
    const tokens: string[] = [];
    for (let i = 0; i < 20; i++) {
      const signedIn = await signIn(`parallel${i}@example.com`, true);
      assert.ok('oauth_token' in signedIn);
      tokens.push(signedIn.oauth_token.refresh_token);
    }
    clock.t += 1500; // past the 1 s subscription cache, within the 5 s project cache
    const { result, sent } = await statementsOf(() =>
      Promise.all(tokens.map((t) => server.ctx.session.refresh(project, t, fingerprint))),
    );
    assert.equal(result.length, 20);
    const reads = sent.filter((s) => /from "webhook_endpoints"/.test(s.text)).length;
    assert.equal(reads, 1, describeIt(sent));
    assert.ok(sent.length <= 20 + 1, `${sent.length} statements for 20 grants`);
  });

  test('an authorization code exchange: three (spend the code, read its user, store the session)', async () => {
    const redirectUri = 'https://rp.example/callback';
    const registered = await registerClient(server, {
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: 'none',
      first_party: true,
    });
    const client = await server.ctx.clients.byClientId(registered.client_id);
    assert.ok(client);
    const browser = new Browser(server.url);
    const { verifier, challenge } = pkce();
    const started = await browser.go(
      authorizeUrl({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: redirectUri,
        scope: 'openid email offline_access',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }),
    );
    const done = await signInOnHostedPages(server, browser, started.location!, 'exchange@example.com');
    const { code } = redirectParams(done.location);
    const { result, sent } = await statementsOf(() =>
      server.ctx.authorize.exchange(client, { code, redirect_uri: redirectUri, code_verifier: verifier }),
    );
    assert.ok(result.id_token && result.refresh_token, 'an ID token and a refresh token');
    // Before: seven (the code spent, then read; the session, the user and the claims read one by
    // one; the session stored; the code updated with it).
    assert.equal(sent.length, 3, `${sent.length} round trips:\n${describeIt(sent)}`);
  });
});
