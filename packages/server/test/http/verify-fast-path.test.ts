// POST /verify is answered ahead of Fastify's pipeline when it can be (verify-fast-path.ts): each
// request here is sent over a socket (the fast path, or Fastify when it declines) and through
// app.inject (always Fastify's pipeline), and both answers must be the same.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { VerifyReasons } from '@tessera/core';
import { DatabaseUnavailableError } from '../../src/errors.js';
import { signJwt } from '../../src/tokens/jwt.js';
import { eachDialect, startServer, type TestServer, uniqueEmail } from '../helpers/harness.js';
import {
  type Answer,
  countVerifyRequests,
  injected,
  overSocket,
  type Sent,
} from '../helpers/verify-parity.js';

/** A request to POST /verify unless said otherwise, as JSON unless said otherwise. */
interface Request {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Send the body chunked (no Content-Length). */
  chunked?: boolean;
}

const sentOf = (request: Request): Sent => ({
  method: request.method ?? 'POST',
  path: request.path ?? '/verify',
  headers: { 'content-type': 'application/json', ...request.headers },
  body: request.body === undefined ? undefined : Buffer.from(request.body),
  ...(request.chunked ? { chunkedAt: 5 } : {}),
});

eachDialect('POST /verify fast path', (dialect) => {
  let server: TestServer;
  let token: string;
  /** Requests routed to POST /verify by Fastify: those its pipeline answered. */
  const routed = countVerifyRequests();

  before(async () => {
    server = await startServer(dialect, {
      env: { TESSERA_RATE_LIMIT_IP: '100000/60' },
      onRoute: routed.onRoute,
    });
    token = (await server.signIn(uniqueEmail('fast'))).access_token;
  });
  after(() => server.close());

  const body = (accessToken: unknown, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ oauth_token: { access_token: accessToken }, ...extra });

  /** Sends `sent` both ways; returns the socket's answer and how many the route handler answered. */
  async function both(request: Request): Promise<{ answer: Answer; viaFastify: number }> {
    const sent = sentOf(request);
    const before = routed.count;
    const answer = await overSocket(server.url, sent);
    const viaFastify = routed.count - before;
    assert.deepEqual(answer, await injected(server, sent), `the same answer for ${JSON.stringify(request)}`);
    return { answer, viaFastify };
  }

  test('well-formed requests are answered ahead of Fastify, exactly as the route answers them', async () => {
    const apiKeyId = server.project.api_key_id;
    const cases: Array<[Request, string]> = [
      [{ body: body(token) }, '{"success":true}'],
      [{ body: body(token), headers: { api_key_id: apiKeyId } }, '{"success":true}'],
      [{ body: body(token), headers: { 'Api-Key-Id': apiKeyId } }, '{"success":true}'],
      [
        { body: body(token), headers: { api_key_id: 'pk_other' } },
        JSON.stringify({ success: false, reason: VerifyReasons.wrongAudience }),
      ],
      [
        { body: body(token), headers: { api_key_id: '' } },
        JSON.stringify({ success: false, reason: VerifyReasons.wrongAudience }),
      ],
      [{ body: body(token), headers: { origin: 'https://anywhere.example' } }, '{"success":true}'],
      [
        { body: body(token), headers: { 'content-type': 'application/json; charset=utf-8' } },
        '{"success":true}',
      ],
      [{ body: body(token, { extra: [1, { a: 'b' }] }) }, '{"success":true}'],
      [{ body: ` \n${body(token)}\n ` }, '{"success":true}'],
      [{ body: body('not.a.token') }, JSON.stringify({ success: false, reason: VerifyReasons.invalid })],
      [{ body: body('') }, JSON.stringify({ success: false, reason: VerifyReasons.invalid })],
    ];
    for (const [sent, expected] of cases) {
      const { answer, viaFastify } = await both(sent);
      assert.equal(answer.status, 200);
      assert.equal(answer.text, expected);
      assert.equal(viaFastify, 0, `answered ahead of Fastify: ${JSON.stringify(sent)}`);
    }
  });

  test('bodies a plain JSON.parse could judge otherwise than Fastify are replayed through it', async () => {
    const cases: Request[] = [
      { body: '{"oauth_token":{"access_token":"a\\u0000b"}}' },
      { body: JSON.stringify({ oauth_token: { access_token: `${token}\\` } }) },
      { body: `{"oauth_token":{"access_token":"${token}"},"__proto__":{"x":1}}` },
      { body: `{"oauth_token":{"access_token":"${token}"},"constructor":{"prototype":{"x":1}}}` },
      { body: `{"oauth_token":{"access_token":"${token}"}` },
      { body: 'null' },
      { body: '[]' },
      { body: body(token).replace('{', '[') },
      { body: JSON.stringify({ oauth_token: token }) },
      { body: JSON.stringify({ oauth_token: [token] }) },
      { body: JSON.stringify({ oauth_token: { access_token: 12 } }) },
      { body: JSON.stringify({ oauth_token: {} }) },
      { body: JSON.stringify({}) },
      { body: body('x'.repeat(8193)) },
    ];
    for (const sent of cases) {
      const { answer, viaFastify } = await both(sent);
      const shown = sent.body?.replace(token, '<token>').slice(0, 100);
      assert.equal(viaFastify, 1, `replayed through Fastify: ${shown}`);
      assert.ok(answer.status === 400 || answer.text !== '{"success":true}', `not valid: ${shown}`);
      if (answer.status === 400)
        assert.deepEqual(JSON.parse(answer.text), { success: false, reason: VerifyReasons.malformedRequest });
    }
    // An escape that is no NUL is as valid as through Fastify: replayed, and answered alike.
    const escaped = await both({ body: body(token).replace('"access_token"', '"access\\u005ftoken"') });
    assert.equal(escaped.viaFastify, 1);
    assert.equal(escaped.answer.text, '{"success":true}');
  });

  test('requests it does not take go to Fastify untouched, and are answered alike', async () => {
    const cases: Array<[Request, number]> = [
      [{ body: body(token), headers: { 'content-type': 'text/plain' } }, 400],
      [{ body: body(token), headers: { 'content-type': 'application/json; charset=latin1' } }, 200],
      [{ body: body(token), chunked: true }, 200],
      [{ body: '' }, 400],
      [{ body: body('x'.repeat(20_000)) }, 413],
      [{ body: body(token), path: '/verify?x=1' }, 200],
      [{ method: 'GET' }, 404],
      [{ body: body(token), method: 'PUT' }, 404],
    ];
    for (const [sent, status] of cases) {
      const { answer, viaFastify } = await both(sent);
      assert.equal(answer.status, status, JSON.stringify(sent).slice(0, 120));
      if (sent.method === undefined) assert.equal(viaFastify, 1, 'answered by the route, not ahead of it');
    }
  });

  test('a body over the body limit is refused with 413, as by Fastify', async () => {
    const sent = { body: body('x'.repeat(server.config.bodyLimit)) };
    const { answer } = await both(sent);
    assert.equal(answer.status, 413);
    assert.deepEqual(JSON.parse(answer.text), { success: false, reason: VerifyReasons.tooLarge });
  });

  test('a verification that waits (the keys read again for an unknown kid) is answered ahead of Fastify too', async () => {
    const key = server.ctx.keys.signingKey();
    const unknownKid = signJwt(
      { alg: 'ES256', kid: 'not-a-known-kid', typ: 'at+jwt' },
      { sub: 'x' },
      key.privateKey,
    );
    const { answer, viaFastify } = await both({ body: body(unknownKid) });
    assert.equal(viaFastify, 0);
    assert.deepEqual(JSON.parse(answer.text), { success: false, reason: VerifyReasons.unknownKey });
  });

  test("a verification that fails on the database answers 503 in /verify's format, as the route does", async () => {
    const verify = server.ctx.verify;
    const original = verify.verify;
    verify.verify = () => Promise.reject(new DatabaseUnavailableError());
    try {
      const { answer, viaFastify } = await both({ body: body(token) });
      assert.equal(viaFastify, 0);
      assert.equal(answer.status, 503);
      assert.ok(Number(answer.headers['retry-after']) > 0);
      assert.deepEqual(JSON.parse(answer.text), { success: false, reason: VerifyReasons.unavailable });
      verify.verify = () => {
        throw new Error('a bug');
      };
      const thrown = await both({ body: body(token) });
      assert.equal(thrown.answer.status, 500);
      assert.deepEqual(JSON.parse(thrown.answer.text), {
        success: false,
        reason: VerifyReasons.internalError,
      });
    } finally {
      verify.verify = original;
    }
  });

  test("a replay that fails, even by throwing, is answered 500 in /verify's format, not left hanging", async () => {
    const inject = server.app.inject;
    const sent = sentOf({ body: body(token).replace('"access_token"', '"access\\u005ftoken"') });
    try {
      server.app.inject = (() => {
        throw new Error('inject broke');
      }) as unknown as typeof inject;
      const thrown = await overSocket(server.url, sent);
      assert.equal(thrown.status, 500);
      assert.equal(thrown.text, JSON.stringify({ success: false, reason: VerifyReasons.internalError }));
      server.app.inject = (() => Promise.reject(new Error('inject failed'))) as unknown as typeof inject;
      assert.equal((await overSocket(server.url, sent)).status, 500);
    } finally {
      server.app.inject = inject;
    }
    assert.equal((await overSocket(server.url, sent)).text, '{"success":true}');
  });

  test('answers ahead of Fastify are counted in the request metrics', async () => {
    const metricsOf = () => server.ctx.metrics.text();
    const count = (text: string) => {
      const line = text
        .split('\n')
        .find((l) => /^tessera_http_requests_total\{.*route="\/verify".*status="200"/.test(l));
      return line ? Number(line.split(' ').pop()) : 0;
    };
    const before = count(await metricsOf());
    await overSocket(server.url, sentOf({ body: body(token) }));
    await overSocket(server.url, sentOf({ body: body(token) }));
    assert.equal(count(await metricsOf()) - before, 2);
  });
});

eachDialect('POST /verify fast path while closing', (dialect) => {
  test('a request whose body arrives once closing has begun is still answered (the drain waits for it), and its connection closes', async () => {
    const server = await startServer(dialect, { env: { TESSERA_RATE_LIMIT_IP: '100000/60' } });
    const token = (await server.signIn(uniqueEmail('closing'))).access_token;
    const payload = Buffer.from(JSON.stringify({ oauth_token: { access_token: token } }));
    const { port } = new URL(server.url);
    const socket = connect(Number(port), '127.0.0.1');
    await once(socket, 'connect');
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.write(
      `POST /verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${payload.length}\r\n\r\n`,
    );
    socket.write(payload.subarray(0, 10));
    await sleep(50);
    const closing = server.close();
    await sleep(50);
    socket.write(payload.subarray(10));
    await once(socket, 'close');
    await closing;
    const text = Buffer.concat(received).toString();
    const [head = '', answer = ''] = text.split('\r\n\r\n');
    assert.match(head, /^HTTP\/1\.1 200 /);
    assert.match(head, /\r\nconnection: close\r\n/i);
    assert.equal(answer, '{"success":true}');
  });
});

test('a client that goes away in the middle of its body does not hold the drain', async () => {
  const server = await startServer('sqlite');
  const { port } = new URL(server.url);
  const socket = connect(Number(port), '127.0.0.1');
  await once(socket, 'connect');
  socket.write(
    'POST /verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"oauth',
  );
  await sleep(50);
  socket.destroy();
  await sleep(50);
  // Counted in flight until its request closed: a leak would make close wait its 5 s drain timeout.
  const closed = server.close().then(() => 'closed');
  assert.equal(await Promise.race([closed, sleep(3000, 'still draining')]), 'closed');
});
