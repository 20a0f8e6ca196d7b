import assert from 'node:assert/strict';
import { connect as tcpConnect } from 'node:net';
import { test } from 'node:test';
import { VerifyReasons } from '@tessera/core';
import { basicAuth, eachDialect, startServer, type TestServer } from '../helpers/harness.js';

/** One raw HTTP/1.1 answer: status, lower-cased headers, body text. */
interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Parses the answers of a pipelined exchange (ASCII, Content-Length bodies), in order. */
function parseAnswers(raw: string): RawAnswer[] {
  const answers: RawAnswer[] = [];
  let rest = raw;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    const bodyStart = end + 4;
    answers.push({
      status: Number(statusLine!.split(' ')[1]),
      headers,
      body: rest.slice(bodyStart, bodyStart + length),
    });
    rest = rest.slice(bodyStart + length);
  }
  return answers;
}

function rawRequest(method: string, path: string, headers: Record<string, string> = {}, body?: string) {
  const lines = [`${method} ${path} HTTP/1.1`, 'host: 127.0.0.1'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== undefined)
    lines.push('content-type: application/json', `content-length: ${Buffer.byteLength(body)}`);
  return `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`;
}

/** Resolves once the server no longer accepts connections (its close has begun). */

eachDialect('Route families', (dialect) => {
  test('/verify: an unexpected failure is a 500 saying the token was not checked, never "malformed request"', async () => {
    const server = await startServer(dialect);
    try {
      server.ctx.verify.verify = () => {
        throw new Error('storage went away');
      };
      const answer = await server.request('POST', '/verify', {
        body: { oauth_token: { access_token: 'eyJ.x.y' } },
      });
      assert.equal(answer.status, 500, answer.text);
      assert.deepEqual(answer.body, { success: false, reason: VerifyReasons.internalError });
      assert.ok(!answer.text.includes('storage went away'));
    } finally {
      await server.close();
    }
  });

  test('closing waits for the per-IP share, the OTP refunds and the audit events together, not in turn', async () => {
    const server = await startServer(dialect);
    const { ipLimiter, otp, audit } = server.ctx;
    // Each wait ends only once all three have begun: waited for in turn, closing would never end.
    const started: string[] = [];
    let allStarted!: () => void;
    const barrier = new Promise<void>((resolve) => {
      allStarted = resolve;
    });
    const waiting = (name: string, original: () => Promise<void>) => async () => {
      started.push(name);
      if (started.length === 3) allStarted();
      await barrier;
      await original();
    };
    ipLimiter.stop = waiting('per-IP share', ipLimiter.stop.bind(ipLimiter));
    otp.drain = waiting('OTP refunds', otp.drain.bind(otp));
    audit.drain = waiting('audit events', audit.drain.bind(audit));
    const closing = server.close().then(() => 'closed');
    const outcome = await Promise.race([closing, new Promise((r) => setTimeout(r, 5000, 'still waiting'))]);
    allStarted();
    await closing;
    assert.equal(outcome, 'closed', `began: ${started.join(', ')}`);
    assert.deepEqual(started.sort(), ['OTP refunds', 'audit events', 'per-IP share']);
  });

  test('while the server closes, a request still arriving gets 503 and Retry-After in its family format', async () => {
    const server: TestServer = await startServer(dialect);
    const port = Number(new URL(server.url).port);
    const key = server.project.api_key_id;
    const cases: Array<{ name: string; request: string; check(answer: RawAnswer): void }> = [
      {
        name: 'verify',
        request: rawRequest('POST', '/verify', {}, JSON.stringify({ oauth_token: { access_token: 'x' } })),
        check: (a) =>
          assert.deepEqual(JSON.parse(a.body), { success: false, reason: VerifyReasons.unavailable }),
      },
      ...(
        [
          ['health', rawRequest('GET', '/healthz')],
          [
            'app-facing',
            rawRequest('POST', '/v1/auth/otp/start', { api_key_id: key }, '{"identifier":"a@b.c"}'),
          ],
          [
            'integrator',
            rawRequest('GET', '/v1/users?identifier=a', { authorization: basicAuth(server.project) }),
          ],
          ['operations', rawRequest('GET', '/metrics')],
          ['no family', rawRequest('GET', '/nope')],
        ] as const
      ).map(([name, request]) => ({
        name,
        request,
        check: (a: RawAnswer) => {
          assert.match(a.headers['content-type'] ?? '', /^application\/problem\+json/);
          const problem = JSON.parse(a.body);
          assert.equal(problem.code, 'service_unavailable');
          assert.equal(problem.status, 503);
          assert.equal(problem.retry_after, 1);
        },
      })),
      ...(
        [
          ['oauth', rawRequest('POST', '/oauth/token', {}, '{"grant_type":"refresh_token"}')],
          ['oauth 404', rawRequest('GET', '/oauth/nope')],
        ] as const
      ).map(([name, request]) => ({
        name,
        request,
        check: (a: RawAnswer) => {
          assert.equal(JSON.parse(a.body).error, 'temporarily_unavailable');
          assert.equal(a.headers['cache-control'], 'no-store');
        },
      })),
    ];

    // Each connection holds a /readyz request in flight; the case's request comes on a new
    // connection once the close has begun (app.close() waits for the requests in flight before the
    // listener closes; a request arriving meanwhile is refused). The answer in flight closes its
    // connection, so that its client sends nothing more on one about to close.
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Probes share one storage check (readiness runs one at a time): the first /readyz holds it
    // at the gate, and the others wait on it once the server has read them.
    let held = 0;
    const ping = server.ctx.db.ping;
    server.ctx.db.ping = async () => {
      held++;
      await gate;
      return ping();
    };
    let arrived = 0;
    server.app.server.on('request', () => {
      arrived++;
    });
    const exchange = (request: string) => {
      const socket = tcpConnect(port, '127.0.0.1');
      return new Promise<string>((resolve, reject) => {
        let received = '';
        socket.on('data', (chunk) => {
          received += chunk.toString('latin1');
        });
        socket.on('close', () => resolve(received));
        socket.on('error', reject);
        socket.write(request);
      });
    };
    const inFlight = cases.map(() => exchange(rawRequest('GET', '/readyz')));
    try {
      while (held < 1 || arrived < cases.length) await new Promise((r) => setTimeout(r, 5));
      const closed = server.close();
      await new Promise((r) => setTimeout(r, 50));
      const late = cases.map((c) => exchange(c.request));
      // Let the late requests be read and refused before the requests in flight finish.
      await new Promise((r) => setTimeout(r, 100));
      release();
      const [answered, refused] = [await Promise.all(inFlight), await Promise.all(late)];
      await closed;
      cases.forEach((c, i) => {
        const [answer] = parseAnswers(answered[i]!);
        assert.equal(answer?.status, 200, `${c.name}: the request in flight finishes`);
        assert.equal(answer.headers.connection, 'close', `${c.name}: ${answered[i]}`);
        const [late] = parseAnswers(refused[i]!);
        assert.equal(late?.status, 503, `${c.name}: ${refused[i]}`);
        assert.equal(late.headers['retry-after'], '1', c.name);
        assert.equal(late.headers.connection, 'close', c.name);
        c.check(late);
      });
    } finally {
      release();
    }
  });

  test('preflights answer per family: any origin for /verify, discovery and OAuth, apps (whose requests are then checked), none elsewhere', async () => {
    const server = await startServer(dialect);
    try {
      const preflight = (path: string, origin: string) =>
        server.request('OPTIONS', path, { headers: { origin, 'access-control-request-method': 'POST' } });
      for (const path of ['/verify', '/.well-known/jwks.json']) {
        const answer = await preflight(path, 'https://anywhere.example');
        assert.equal(answer.status, 204, path);
        assert.equal(answer.headers.get('access-control-allow-origin'), '*');
        assert.equal(answer.headers.get('access-control-max-age'), '86400');
      }
      // OAuth endpoints browsers call (SPAs, browser-based MCP clients of any origin): no
      // credentials; the route checks the request's client against its origins.
      for (const path of [
        '/oauth/token',
        '/oauth/token/pk_x',
        '/oauth/revoke',
        '/oauth/revoke/pk_x',
        '/oauth/userinfo',
        '/oauth/register/pk_x',
      ]) {
        const answer = await preflight(path, 'https://anywhere.example');
        assert.equal(answer.status, 204, path);
        assert.equal(answer.headers.get('access-control-allow-origin'), '*', path);
        assert.equal(answer.headers.get('access-control-allow-credentials'), null, path);
        assert.equal(answer.headers.get('access-control-max-age'), '600');
        assert.equal(answer.headers.get('access-control-allow-methods'), 'GET, POST, OPTIONS');
      }
      for (const path of [
        '/v1/auth/pin/start',
        '/v1/devices',
        '/v1/devices/dev_1',
        '/v1/pin',
        '/v1/biometrics',
        '/v1/biometrics/register/start',
      ]) {
        const answer = await preflight(path, 'http://app.test');
        assert.equal(answer.status, 204, path);
        assert.equal(answer.headers.get('access-control-allow-origin'), 'http://app.test');
        assert.equal(answer.headers.get('access-control-max-age'), '600');
        assert.equal(
          answer.headers.get('access-control-allow-methods'),
          'GET, POST, PUT, PATCH, DELETE, OPTIONS',
        );
        // An origin no project lists: answered too, so that the browser sends the request and
        // lets the page read its 403 (issue 30; the request itself is refused by the CORS hook).
        const unlisted = await preflight(path, 'http://evil.test');
        assert.equal(unlisted.status, 204, path);
        assert.equal(unlisted.headers.get('access-control-allow-origin'), 'http://evil.test');
      }
      for (const path of [
        '/oauth/introspect',
        // The integrator API (HTTP Basic with the API key secret) is server to server: no CORS.
        '/v1/clients',
        '/v1/clients/tc_x',
        '/v1/project/client-registration',
        '/v1/users',
        '/v1/audit',
        '/v1/webhooks',
        '/metrics',
        '/healthz',
      ]) {
        const answer = await preflight(path, 'http://app.test');
        assert.equal(answer.status, 404, path);
        assert.equal(answer.headers.get('access-control-allow-origin'), null, path);
      }
      // An OPTIONS request that is no preflight is a 404 in the family's 404 format.
      const oauth = await server.request('OPTIONS', '/oauth/token', {
        headers: { origin: 'http://app.test' },
      });
      assert.equal(oauth.status, 404);
      assert.deepEqual(oauth.body, {
        error: 'invalid_request',
        error_description: 'no route OPTIONS /oauth/token',
      });
      assert.equal(oauth.headers.get('access-control-allow-origin'), '*');
    } finally {
      await server.close();
    }
  });
});
