import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { eachDialect, freePort, startServer, type TestServer } from '../helpers/harness.js';
import { assertProblem } from '../helpers/sign-in-methods.js';

// TESSERA_OTP_START_VERIFIER_URL: before a code is sent, the integrator's verifier judges the
// client's challenge_token (a CAPTCHA response or an app-attestation token). A local fake plays
// the verifier: it passes the token "human", fails "robot" (200 or 403), and breaks on "boom".

interface Asked {
  body: Record<string, unknown>;
  headers: IncomingHttpHeaders;
}

async function fakeVerifier(): Promise<{ server: Server; url: string; asked: Asked[] }> {
  const asked: Asked[] = [];
  const server = createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk) => {
      raw += chunk;
    });
    request.on('end', () => {
      const body = JSON.parse(raw) as Record<string, unknown>;
      asked.push({ body, headers: request.headers });
      const reply = (status: number, answer: unknown) => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(answer));
      };
      if (body.token === 'slow') return; // never answers
      if (body.token === 'human') reply(200, { success: true });
      else if (body.token === 'robot')
        reply(200, { success: false, 'error-codes': ['invalid-input-response'] });
      else if (body.token === 'robot-403') reply(403, { success: true });
      else if (body.token === 'moved') reply(302, { success: true });
      else if (body.token === 'not-json') {
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.end('ok');
      } else reply(500, { success: true });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}/otp-start`, asked };
}

eachDialect('OTP start verifier (CAPTCHA or app attestation)', (dialect) => {
  let verifier: Awaited<ReturnType<typeof fakeVerifier>>;
  let server: TestServer;
  before(async () => {
    verifier = await fakeVerifier();
    server = await startServer(dialect, {
      env: {
        TESSERA_TRUST_PROXY: '1',
        TESSERA_OTP_START_VERIFIER_URL: verifier.url,
        TESSERA_OTP_START_VERIFIER_TOKEN: 'verifier-secret-1',
      },
    });
  });
  after(async () => {
    await server.close();
    verifier.server.closeAllConnections();
    await new Promise((resolve) => verifier.server.close(resolve));
  });

  const start = (identifier: string, token?: string, s = server) =>
    s.request('POST', '/v1/auth/otp/start', {
      body: token === undefined ? { identifier } : { identifier, challenge_token: token },
      headers: { api_key_id: s.project.api_key_id, 'x-forwarded-for': '203.0.113.9' },
    });

  test('no challenge_token: 403 captcha_required, the verifier is not asked and nothing is sent', async () => {
    const before = verifier.asked.length;
    const answer = await start('no-token@example.com');
    assertProblem(answer, 403, 'captcha_required');
    assert.match(answer.body.detail, /challenge_token/);
    assert.equal(verifier.asked.length, before);
    assert.equal(server.outbox.list().filter((m) => m.to === 'no-token@example.com').length, 0);
  });

  test('the verifier gets the token, channel, client IP and project; its yes lets the code go', async () => {
    const answer = await start('+14155552671', 'human');
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.channel, 'sms');
    const last = verifier.asked.at(-1)!;
    assert.deepEqual(last.body, {
      token: 'human',
      channel: 'sms',
      ip: '203.0.113.9',
      project_id: server.project.project_id,
    });
    assert.equal(last.headers.authorization, 'Bearer verifier-secret-1');
    assert.equal(last.headers['content-type'], 'application/json');
    assert.ok(server.lastCode('+14155552671'));
  });

  test('a token the verifier fails: 403 captcha_failed, and the resend interval is not spent', async () => {
    for (const token of ['robot', 'robot-403', 'not-json']) {
      const answer = await start('ada@example.com', token);
      assertProblem(answer, 403, 'captcha_failed');
      assert.ok(!answer.text.includes(token), 'the answer quotes the token');
    }
    assert.equal(server.outbox.list().filter((m) => m.to === 'ada@example.com').length, 0);
    // The real user, after solving the challenge, gets a code at once.
    assert.equal((await start('ada@example.com', 'human')).status, 200);
  });

  test('a broken verifier fails closed: 503 service_unavailable with Retry-After', async () => {
    for (const token of ['boom', 'moved']) {
      const answer = await start('grace@example.com', token);
      assertProblem(answer, 503, 'service_unavailable');
      assert.equal(answer.headers.get('retry-after'), '5');
    }
    const port = await freePort();
    const unreachable = await startServer(dialect, {
      env: { TESSERA_OTP_START_VERIFIER_URL: `http://127.0.0.1:${port}/nobody` },
    });
    const slow = await startServer(dialect, {
      env: { TESSERA_OTP_START_VERIFIER_URL: verifier.url, TESSERA_OTP_START_VERIFIER_TIMEOUT: '1' },
    });
    try {
      assertProblem(await start('grace@example.com', 'human', unreachable), 503, 'service_unavailable');
      const began = Date.now();
      assertProblem(await start('grace@example.com', 'slow', slow), 503, 'service_unavailable');
      assert.ok(Date.now() - began < 4000, 'the verifier timeout was not applied');
      assert.equal(unreachable.outbox.list().length + slow.outbox.list().length, 0);
    } finally {
      await unreachable.close();
      await slow.close();
    }
  });

  test('a challenge_token over 8192 characters is a 400', async () => {
    assertProblem(await start('long@example.com', 'x'.repeat(8193)), 400, 'invalid_request');
  });

  test('TESSERA_OTP_START_VERIFIER_CHANNELS=sms checks SMS starts only', async () => {
    const smsOnly = await startServer(dialect, {
      env: { TESSERA_OTP_START_VERIFIER_URL: verifier.url, TESSERA_OTP_START_VERIFIER_CHANNELS: 'sms' },
    });
    try {
      const before = verifier.asked.length;
      assert.equal((await start('mail@example.com', undefined, smsOnly)).status, 200);
      assertProblem(await start('+14155552672', undefined, smsOnly), 403, 'captcha_required');
      assertProblem(await start('+14155552672', 'robot', smsOnly), 403, 'captcha_failed');
      assert.equal(verifier.asked.length, before + 1);
      assert.equal(verifier.asked.at(-1)!.headers.authorization, undefined);
    } finally {
      await smsOnly.close();
    }
  });
});
