// Retries, timeouts, aborts and typed errors of @tessera/admin, against a real server behind a
// small proxy that misbehaves on cue (drops the connection, answers 5xx or 429, never answers), as
// networks and load balancers do.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { freePort, startServer, type TestServer, uniqueEmail } from '../../server/test/helpers/harness.js';
import { otpUser, type SignedInUser } from '../../server/test/helpers/sign-in-methods.js';
import { createTesseraAdmin, type TesseraAdminOptions } from '../src/index.js';
import { rejection } from './support.js';

type Fault =
  | 'pass'
  | 'drop'
  | 'hang'
  | 'html-502'
  | 'html-200'
  | { status: number; retryAfter?: string; body?: unknown };

/** A proxy to `target` that applies the queued faults to the next requests, one each, then passes. */
async function faultyProxy(target: string) {
  const faults: Fault[] = [];
  const seen: Array<{ method: string; url: string; headers: IncomingMessage['headers'] }> = [];
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer(async (req, res) => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers });
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const fault = faults.shift() ?? 'pass';
    if (fault === 'drop') return req.socket.destroy();
    if (fault === 'hang') return void hanging.add(res);
    if (fault === 'html-502' || fault === 'html-200')
      return res
        .writeHead(fault === 'html-502' ? 502 : 200, { 'content-type': 'text/html' })
        .end('<html>Bad Gateway</html>');
    if (typeof fault === 'object') {
      const body = JSON.stringify(
        fault.body ?? {
          type: 'about:blank',
          title: 'Unavailable',
          status: fault.status,
          code: fault.status === 429 ? 'rate_limited' : 'service_unavailable',
          detail: 'try again',
        },
      );
      return res
        .writeHead(fault.status, {
          'content-type': 'application/problem+json',
          ...(fault.retryAfter !== undefined && { 'retry-after': fault.retryAfter }),
        })
        .end(body);
    }
    const path = req.url!.replace(/^\/base/, '');
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(
        ([name]) => !['host', 'connection', 'content-length'].includes(name),
      ),
    ) as Record<string, string>;
    const answer = await fetch(`${target}${path}`, {
      method: req.method!,
      headers,
      ...(chunks.length > 0 && { body: Buffer.concat(chunks) }),
    });
    const responseHeaders: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(name))
        responseHeaders[name] = value;
    });
    res.writeHead(answer.status, responseHeaders).end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    faults,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('@tessera/admin: retries, timeouts and errors', () => {
  let server: TestServer;
  let proxy: Awaited<ReturnType<typeof faultyProxy>>;
  let user: SignedInUser;
  const client = (options: Partial<TesseraAdminOptions> = {}) =>
    createTesseraAdmin({
      issuer: proxy.url,
      apiKeyId: server.project.api_key_id,
      apiKeySecret: server.project.api_key_secret,
      retry: { minDelay: 1, maxDelay: 2000 },
      ...options,
    } as TesseraAdminOptions);

  before(async () => {
    server = await startServer('sqlite');
    proxy = await faultyProxy(server.url);
    user = await otpUser(server, uniqueEmail('transport'));
  });
  after(async () => {
    await proxy?.close();
    await server?.close();
  });

  test('a GET is retried after a dropped connection, a 503 with Retry-After and a 502, then answers', async () => {
    proxy.seen.length = 0;
    proxy.faults.push('drop', { status: 503, retryAfter: '0' }, 'html-502');
    const admin = client({ retry: { retries: 3, minDelay: 1 } });
    assert.equal((await admin.users.get(user.userId)).user_id, user.userId);
    assert.equal(proxy.seen.length, 4);
  });

  test('a PUT is retried; a POST and a PATCH never are (no Idempotency-Key in the API)', async () => {
    proxy.seen.length = 0;
    proxy.faults.push({ status: 503 });
    assert.deepEqual(await client().claims.set(user.userId, { plan: 'pro' }), { plan: 'pro' });
    assert.equal(proxy.seen.length, 2);

    proxy.seen.length = 0;
    proxy.faults.push({ status: 503, retryAfter: '0' });
    const post = await rejection(client().users.revokeSessions(user.userId));
    assert.equal(post.code, 'service_unavailable');
    assert.equal(post.status, 503);
    assert.equal(post.operation, 'revokeSessions');
    proxy.faults.push('drop');
    await assert.rejects(client().users.update(user.userId, { client_user_id: 'x' }), {
      code: 'network_error',
    });
    assert.equal(proxy.seen.length, 2, 'one attempt each');
    assert.equal(
      (await client().users.get(user.userId)).client_user_id,
      user.userId,
      'the PATCH never arrived',
    );
  });

  test('a Retry-After longer than maxDelay is not waited for: the error carries it', async () => {
    proxy.seen.length = 0;
    proxy.faults.push({ status: 429, retryAfter: '120' });
    const started = Date.now();
    const error = await rejection(client().users.get(user.userId));
    assert.equal(error.code, 'rate_limited');
    assert.equal(error.retryAfter, 120);
    assert.equal(proxy.seen.length, 1);
    assert.ok(Date.now() - started < 1500);
  });

  test('retries run out: the last refusal is thrown', async () => {
    proxy.seen.length = 0;
    proxy.faults.push({ status: 504 }, { status: 504 }, { status: 504 });
    await assert.rejects(client({ retry: { retries: 2, minDelay: 1 } }).users.get(user.userId), {
      name: 'TesseraAdminError',
      code: 'service_unavailable',
      status: 504,
    });
    assert.equal(proxy.seen.length, 3);
    proxy.faults.length = 0;
  });

  test('an attempt that takes longer than the timeout fails as timeout (and is retried if safe)', async () => {
    proxy.seen.length = 0;
    proxy.faults.push('hang', 'hang');
    await assert.rejects(
      client({ timeout: 200, retry: { retries: 1, minDelay: 1 } }).users.get(user.userId),
      {
        code: 'timeout',
      },
    );
    assert.equal(proxy.seen.length, 2);
    proxy.faults.push('hang');
    assert.equal((await client({ timeout: 200 }).users.get(user.userId)).user_id, user.userId);
  });

  test('an abort rejects with the signal’s reason, and no retry follows', async () => {
    proxy.seen.length = 0;
    proxy.faults.push({ status: 503, retryAfter: '2' });
    const controller = new AbortController();
    const reason = new Error('the user navigated away');
    const call = client({ retry: { retries: 3, maxDelay: 5000 } }).users.get(user.userId, {
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(reason), 200);
    await assert.rejects(call, (e) => e === reason);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(proxy.seen.length, 1);
  });

  test('no service there: network_error after the retries', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    await assert.rejects(client({ issuer: closed, retry: { retries: 1, minDelay: 1 } }).users.get('u'), {
      code: 'network_error',
      operation: 'getUser',
    });
  });

  test('answers that are not the API’s: typed by status, or invalid_response for a success', async () => {
    proxy.faults.push('html-502');
    await assert.rejects(client({ retry: { retries: 0 } }).users.get(user.userId), {
      code: 'service_unavailable',
      detail: 'the service answered 502',
    });
    proxy.faults.push('html-200');
    await assert.rejects(client().users.get(user.userId), { code: 'invalid_response', status: 200 });
    proxy.faults.push({
      status: 418,
      body: { type: 'about:blank', title: 'New', status: 418, code: 'a_code_of_a_newer_server', detail: 'd' },
    });
    const unknown = await rejection(client().users.get(user.userId));
    assert.equal(unknown.code, 'invalid_request', 'a code this version does not know: the closest by status');
    assert.equal(unknown.body?.code, 'a_code_of_a_newer_server', 'the document as sent');
  });

  test('a base path in the issuer is kept; path parameters are escaped', async () => {
    proxy.seen.length = 0;
    await assert.rejects(client({ issuer: `${proxy.url}/base/` }).users.get('a/b?c'), {
      code: 'user_not_found',
    });
    assert.equal(proxy.seen[0]!.url, '/base/v1/users/a%2Fb%3Fc');
  });

  test('the console credential: the token is asked for on every request, with Tessera-Project', async () => {
    proxy.seen.length = 0;
    let asked = 0;
    const admin = createTesseraAdmin({
      issuer: proxy.url,
      accessToken: async () => `token-${++asked}`,
      project: 'pk_one',
      fetch,
    });
    await admin.webhooks
      .list()
      .toArray()
      .catch(() => {});
    await admin
      .forProject('pk_two')
      .webhooks.list()
      .toArray()
      .catch(() => {});
    assert.deepEqual(
      proxy.seen.map((r) => [r.headers.authorization, r.headers['tessera-project']]),
      [
        ['Bearer token-1', 'pk_one'],
        ['Bearer token-2', 'pk_two'],
      ],
    );
    assert.throws(() => client().forProject('pk_two'), TypeError);
  });

  test('options are checked at once, and no error shows a credential', async () => {
    const issuer = server.url;
    const bad: unknown[] = [
      { issuer },
      { issuer, apiKeyId: 'pk', apiKeySecret: 's', operatorToken: 'o' },
      { issuer, apiKeyId: 'pk' },
      { issuer, apiKeyId: 'p:k', apiKeySecret: 's' },
      { issuer, accessToken: 'not-a-function' },
      { issuer: 'auth.example.com', operatorToken: 'o' },
      { issuer: 'ftp://auth.example.com', operatorToken: 'o' },
      { issuer, operatorToken: 'o', retry: { retries: -1 } },
      { issuer, operatorToken: 'o', timeout: 1.5 },
    ];
    for (const options of bad)
      assert.throws(
        () => createTesseraAdmin(options as TesseraAdminOptions),
        TypeError,
        JSON.stringify(options),
      );

    const secret = 'sk_the-wrong-secret-that-must-not-show';
    const wrong = createTesseraAdmin({ issuer, apiKeyId: server.project.api_key_id, apiKeySecret: secret });
    const error = await rejection(wrong.users.get(user.userId));
    assert.equal(error.code, 'invalid_client');
    assert.equal(error.status, 401);
    const shown = `${error.message} ${error.stack} ${JSON.stringify(error)} ${JSON.stringify(error.body)}`;
    assert.ok(!shown.includes(secret));
    assert.ok(!shown.includes(Buffer.from(`${server.project.api_key_id}:${secret}`).toString('base64')));
  });
});
