/**
 * Property-based fuzz of every public JSON endpoint (issue 12). The routes come from the app's own
 * route table — `GET /openapi.json`, which @fastify/swagger builds from an onRoute hook with each
 * route's schema — so a route added later is fuzzed without touching this file (routes marked
 * `hide: true`, the non-JSON `/metrics`, `/docs` and `/openapi.json`, are left out).
 *
 * Each route gets arbitrary input with and without valid credentials: JSON of any shape, the
 * route's own schema with wrong types per field, nesting thousands deep, strings up to the body
 * limit, unicode (lone surrogates included), prototype-pollution keys, text that is not JSON, and
 * arbitrary query strings and path parameters. Every answer must be below 500, and every error
 * JSON with a reason in its family's format. A failure is shrunk by fast-check and reported with
 * the input.
 */
import assert from 'node:assert/strict';
import { after, before, type TestContext, test } from 'node:test';
import fc from 'fast-check';
import { decodeJwt } from 'jose';
import {
  type Body,
  bodyFor,
  garbageCredentials,
  type Known,
  MAX_PARAM,
  pathFor,
  queryFor,
  type Route,
  routesOf,
} from '../helpers/fuzz-input.js';
import {
  basicAuth,
  type Dialect,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';
import { bearer, otpUser, registerDevice, registerPasskey } from '../helpers/sign-in-methods.js';

/**
 * Inputs per route with a body, and per route without one (PostgreSQL is slower: fewer).
 * `TESSERA_TEST_FUZZ_RUNS` sets the first for a longer run (the second follows at 15%);
 * `TESSERA_TEST_FUZZ_SEED` replays the seed a failure printed.
 */
const FUZZ_RUNS = Number(process.env.TESSERA_TEST_FUZZ_RUNS) || undefined;
const RUNS = {
  sqlite: { body: FUZZ_RUNS ?? 1500, other: Math.ceil((FUZZ_RUNS ?? 1500) * 0.15) },
  postgres: { body: FUZZ_RUNS ?? 300, other: Math.ceil((FUZZ_RUNS ?? 300) * 0.15) },
} as const;
const SEED = Number(process.env.TESSERA_TEST_FUZZ_SEED) || undefined;
/** `TESSERA_TEST_FUZZ_ROUTE` (e.g. `POST /v1/clients/{client_id}/secret`) fuzzes that route only. */
const ONLY_ROUTE = process.env.TESSERA_TEST_FUZZ_ROUTE;

/**
 * What this fuzz found when it was written (issue 12), all fixed since: each is sent below as a
 * named regression test, on top of the properties (which make such inputs too).
 */
interface KnownFailure {
  /** What used to happen. */
  was: string;
  /** `METHOD /path` as in the route table, or `*` for every route. */
  route: string;
  /** Set when only one storage fails. */
  dialect?: Dialect;
  /** The case as found (shrunk where fast-check could), on a fresh user where it needs one. */
  example: (server: TestServer) => Promise<{ method: string; path: string; profile: string; body?: Body }>;
}

const KNOWN_FAILURES: KnownFailure[] = [
  {
    // Fixed in claims.service.ts: the depth check stops at the first level too deep (400 invalid_claims).
    was: 'claims.service depth() overflows the stack on custom claims nested thousands deep: 500',
    route: 'PUT /v1/users/{user_id}/claims',
    example: async (server) => ({
      method: 'PUT',
      path: `/v1/users/${(await otpUser(server, uniqueEmail('fuzz-known'))).userId}/claims`,
      profile: 'Basic',
      body: {
        contentType: 'application/json',
        text: `{"claims":{"a":${'{"a":'.repeat(2500)}1${'}'.repeat(2501)}}`,
      },
    }),
  },
  {
    // Fixed by `frameworkErrors` in buildApp: the router's own refusals are problem documents.
    was: "a path parameter over 100 characters: 414 in Fastify's format, echoing the path",
    route: 'GET /v1/users/{user_id}',
    example: async () => ({
      method: 'GET',
      path: `/v1/users/${'x'.repeat(MAX_PARAM + 1)}`,
      profile: 'Basic',
    }),
  },
  {
    // As above, FST_ERR_BAD_URL.
    was: "a malformed percent-escape in the path: 400 in Fastify's format, echoing the path",
    route: 'GET /v1/users/{user_id}',
    example: async () => ({ method: 'GET', path: '/v1/users/%zz', profile: 'Basic' }),
  },
  {
    // Fixed in projects/branding.ts: a refused logo URL or colour is described, not quoted back
    // (the integrator API never quotes the request; a misplaced key could be the value).
    was: 'PUT /v1/project/branding quotes a refused logo_url in its 400',
    route: 'PUT /v1/project/branding',
    example: async () => ({
      method: 'PUT',
      path: '/v1/project/branding',
      profile: 'Basic',
      body: { contentType: 'application/json', text: '{"logo_url":"pk_Cqc8pP6C--dxRmLXNE_a5Q"}' },
    }),
  },
  {
    // Fixed in http/integrator.ts: unknown paths under /v1/clients answer in the family's OAuth
    // format too (`.` is resolved: the path is /v1/clients/secret, which no route serves).
    was: 'POST /v1/clients/./secret: a 404 problem document in the RFC 7591 family',
    route: 'POST /v1/clients/{client_id}/secret',
    example: async () => ({ method: 'POST', path: '/v1/clients/./secret', profile: 'Basic' }),
  },
  {
    // Fixed in clients.service.ts: the body is checked to be an object before its members are read.
    was: 'PUT /v1/clients/{client_id} with the JSON body null: 500 (a TypeError reading client_id)',
    route: 'PUT /v1/clients/{client_id}',
    example: async (server) => {
      const client = await server.request('POST', '/v1/clients', {
        body: { redirect_uris: ['https://app.test/cb'], client_name: 'known' },
        headers: { authorization: basicAuth(server.project) },
      });
      return {
        method: 'PUT',
        path: `/v1/clients/${client.body.client_id}`,
        profile: 'Basic',
        body: { contentType: 'application/json', text: 'null' },
      };
    },
  },
  {
    // Not a failure of the server: the check took the family from the path as sent. The server
    // routes `/v1/clients/../nothing` as `/v1/nothing` (a problem document's 404), and so does the check now.
    was: 'the check expected the OAuth format for /v1/clients/../nothing, routed as /v1/nothing',
    route: 'GET /v1/clients/{client_id}',
    example: async () => ({ method: 'GET', path: '/v1/clients/../nothing', profile: 'Basic' }),
  },
  {
    // As above, with a body refused as it is parsed on its way to the 404 (the app's error handler
    // answered, in the problem format); the 404's scope has the family's error handler now.
    was: 'POST /v1/clients/./secret with a refused JSON body: a 400 problem document',
    route: 'POST /v1/clients/{client_id}/secret',
    example: async () => ({
      method: 'POST',
      path: '/v1/clients/./secret',
      profile: 'unknown API key',
      body: { contentType: 'application/json', text: '{"__proto__":{"polluted":"yes"}}' },
    }),
  },
  {
    // Fixed in toKnownError (src/errors.ts): PostgreSQL text cannot hold U+0000 (22021), so such an
    // input reaching a query is the client's 400, not a 500.
    was: 'PostgreSQL: U+0000 in an input string that reaches a query: 500',
    route: '*',
    dialect: 'postgres',
    example: async () => ({
      method: 'POST',
      path: '/v1/auth/device/complete',
      profile: 'API key',
      body: { contentType: 'application/json', text: '{"challenge_id":"\\u0000","signature":" "}' },
    }),
  },
];

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

/** Strings of the request long enough that finding one in an error's reason means it was quoted. */
function quotable(headers: Record<string, string>, body: Body | undefined): string[] {
  const found = Object.values(headers);
  const visit = (value: unknown): void => {
    if (typeof value === 'string') found.push(value);
    else if (Array.isArray(value)) for (const item of value) visit(item);
    else if (typeof value === 'object' && value !== null)
      for (const item of Object.values(value)) visit(item);
  };
  if (body?.text !== undefined) {
    try {
      visit(JSON.parse(body.text));
    } catch {
      found.push(body.text);
    }
  }
  return found.filter((text) => text.trim().length >= 12);
}

/**
 * Every answer: below 500; an error is JSON with a reason in the format of its family, and the
 * reason quotes no header value or body string of the request (docs/API.md, "Errors").
 */
/** Routes that answer with HTML pages, errors included (the hosted pages' endpoints). */
const HTML_ROUTES = ['/oauth/authorize', '/oauth/logout'];

function check(sentPath: string, answer: Answer, sent: string[] = []): void {
  assert.ok(answer.status < 500, `${answer.status}: ${answer.text.slice(0, 300)}`);
  if (answer.status < 400) return;
  // The family is the one of the path the server routes: dot segments resolved
  // (`/v1/clients/../nothing` is `/v1/nothing`), as the URL parser does before routing.
  const path = new URL(sentPath, 'http://fuzz.test').pathname;
  // The hosted endpoints (issue 31) answer browsers with an error page: its reason is the alert.
  if (HTML_ROUTES.some((route) => path.startsWith(route))) {
    assert.match(
      answer.contentType,
      /^text\/html/,
      `${answer.status} is not a page: ${answer.text.slice(0, 300)}`,
    );
    const alert = /<p role="alert">([^<]+)<\/p>/.exec(answer.text)?.[1];
    assert.ok(alert, `${answer.status} without a reason: ${answer.text.slice(0, 300)}`);
    for (const text of sent)
      assert.ok(
        !alert.includes(text),
        `${answer.status} quotes the request (${JSON.stringify(text)}): ${alert}`,
      );
    return;
  }
  assert.match(answer.contentType, /json/, `${answer.status} is not JSON: ${answer.text.slice(0, 300)}`);
  const body: unknown = JSON.parse(answer.text);
  assert.ok(typeof body === 'object' && body !== null, `${answer.status}: the body is not a JSON object`);
  const fields = body as Record<string, unknown>;
  // /v1/clients speaks RFC 7591/7592, whose errors are OAuth's (`error`, `error_description`).
  const reason = path.startsWith('/verify')
    ? fields.reason
    : path.startsWith('/oauth/') || path.startsWith('/v1/clients')
      ? fields.error
      : fields.detail;
  assert.ok(
    typeof reason === 'string' && reason.length > 0,
    `${answer.status} without a reason: ${answer.text}`,
  );
  for (const text of sent)
    assert.ok(
      !reason.includes(text),
      `${answer.status} quotes the request (${JSON.stringify(text)}): ${answer.text}`,
    );
}

type Send = (method: string, url: string, headers: Record<string, string>, body?: Body) => Promise<Answer>;

/**
 * A request through the whole app (parsers, hooks, error handler) by inject: real HTTP would make
 * each request several times slower, and HTTP framing is not what is fuzzed here.
 */
async function inject(
  server: TestServer,
  ...[method, url, headers, body]: Parameters<Send>
): Promise<Answer> {
  const response = await server.app.inject({
    method: method as 'GET',
    url,
    headers: body?.text === undefined ? headers : { ...headers, 'content-type': body.contentType },
    ...(body?.text === undefined ? {} : { payload: body.text }),
  });
  return {
    status: response.statusCode,
    contentType: String(response.headers['content-type'] ?? ''),
    text: response.payload,
  };
}

/**
 * Fuzzes each route with `runs` inputs (credentials from `profiles` or garbage, paths and bodies
 * from `known`), deletes last, and fails on the first answer `check` refuses, shrunk.
 */
async function fuzzRoutes(
  t: TestContext,
  routes: Route[],
  options: {
    runs: { body: number; other: number };
    known: Known;
    profiles: Record<string, Record<string, string>>;
    send: Send;
    /**
     * The operator API names the value it refuses (docs/API.md, "Errors": the operator sent it),
     * so only the request's headers must not be quoted.
     */
    namesRefusedValues?: boolean;
  },
): Promise<void> {
  const { runs, known, profiles, send } = options;
  const prototypeBefore = Object.getOwnPropertyNames(Object.prototype);
  const started = Date.now();
  let sent = 0;
  const fuzz = async (route: Route) => {
    const withBody = route.method !== 'GET' && route.method !== 'HEAD';
    const input = fc.record({
      // A named set of real (or plainly wrong) credentials, or arbitrary header values.
      credentials: fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...Object.keys(profiles)) },
        { weight: 1, arbitrary: garbageCredentials },
      ),
      path: pathFor(route, known),
      query: route.method === 'GET' ? queryFor(route, known) : fc.constant(''),
      body: withBody ? fc.option(bodyFor(route, known), { freq: 20 }) : fc.constant(null),
    });
    const details = await fc.check(
      fc.asyncProperty(input, async ({ credentials, path, query, body }) => {
        sent++;
        const headers = typeof credentials === 'string' ? profiles[credentials]! : credentials;
        const answer = await send(route.method, `${path}${query}`, headers, body ?? undefined);
        check(path, answer, quotable(headers, options.namesRefusedValues ? undefined : (body ?? undefined)));
      }),
      { numRuns: withBody ? runs.body : runs.other, ...(SEED === undefined ? {} : { seed: SEED }) },
    );
    // fast-check's own report (seed, shrunk counterexample) with the failed check's message.
    if (details.failed) {
      const cause = details.errorInstance instanceof Error ? details.errorInstance.message : '';
      assert.fail(`${fc.defaultReportMessage(details)}\n${cause}`);
    }
  };
  // Deletes go last, the deepest paths first: DELETE /v1/users/{user_id} early would leave every
  // other route of that user answering 404.
  const phaseOf = (r: Route) => (r.method === 'DELETE' ? 100 - r.path.split('/').length : 0);
  for (const phase of [...new Set(routes.map(phaseOf))].sort((a, b) => a - b)) {
    await Promise.all(
      routes
        .filter((r) => phaseOf(r) === phase)
        .map((route) => t.test(`${route.method} ${route.path}`, () => fuzz(route))),
    );
  }
  t.diagnostic(
    `${sent} requests to ${routes.length} routes in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  // The server runs in this process: no input may have reached Object.prototype.
  assert.deepEqual(Object.getOwnPropertyNames(Object.prototype), prototypeBefore);
  assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
}

eachDialect('fuzz: every public JSON endpoint', (dialect) => {
  let server: TestServer;
  let known: Known;
  let profiles: Record<string, Record<string, string>>;

  before(async () => {
    server = await startServer(dialect, {
      env: { ...RELAXED_LIMITS, TESSERA_RATE_LIMIT_OTP_GUESSES: '100000/60' },
    });
    // Two users: the caller's token signs the Bearer requests; the other's ids fill path
    // parameters, so that integrator deletes cannot end the caller's session.
    const caller = await otpUser(server, uniqueEmail('fuzz-caller'));
    const other = await otpUser(server, uniqueEmail('fuzz-other'));
    const { deviceId } = await registerDevice(server, other);
    await registerPasskey(server, other);
    const passkeys = await server.request('GET', '/v1/biometrics', { headers: bearer(other.bundle) });
    const webhook = await server.request('POST', '/v1/webhooks', {
      body: { url: 'http://127.0.0.1:9/fuzz' },
      headers: { authorization: basicAuth(server.project) },
    });
    assert.equal(webhook.status, 201, webhook.text);
    // A delivery and an OAuth client, so that their routes get past the lookup too (without them
    // every client route answered 404, and a body of `null` replacing a client, a 500, went unseen).
    const delivery = await server.request('POST', `/v1/webhooks/${webhook.body.webhook_id}/test`, {
      headers: { authorization: basicAuth(server.project) },
    });
    assert.equal(delivery.status, 201, delivery.text);
    const client = await server.request('POST', '/v1/clients', {
      body: { redirect_uris: ['https://app.test/cb'], client_name: 'fuzz' },
      headers: { authorization: basicAuth(server.project) },
    });
    assert.equal(client.status, 201, client.text);
    known = {
      bodyLimit: server.config.bodyLimit,
      ids: {
        user_id: [other.userId],
        device_id: [deviceId],
        session_id: [decodeJwt(other.bundle.access_token).sid as string],
        passkey_id: passkeys.body.passkeys.map((p: { passkey_id: string }) => p.passkey_id),
        webhook_id: [webhook.body.webhook_id],
        delivery_id: [delivery.body.delivery_id],
        client_id: [client.body.client_id],
        api_key_id: [server.project.api_key_id],
        file: ['index.html', 'app.js', 'config.json'],
      },
      strings: [
        server.project.api_key_id,
        other.userId,
        other.email,
        deviceId,
        other.bundle.access_token,
        other.bundle.refresh_token,
        other.bundle.id_token,
        'refresh_token',
        'authorization_code',
        '+14155552671',
        'ch_unknown',
        '',
      ],
    };
    const key = { api_key_id: server.project.api_key_id };
    profiles = {
      none: {},
      'API key': key,
      'unknown API key': { api_key_id: 'pk_unknown' },
      Basic: { authorization: basicAuth(server.project) },
      'API key + Basic': { ...key, authorization: basicAuth(server.project) },
      Bearer: bearer(caller.bundle),
      'API key + Bearer': { ...key, ...bearer(caller.bundle) },
      'API key + Bearer + foreign origin': { ...key, ...bearer(caller.bundle), origin: 'https://evil.test' },
      'garbage Bearer': { authorization: 'Bearer a.b.c' },
    };
  });
  after(() => server.close());

  const send: Send = (...request) => inject(server, ...request);

  test('every route of the route table answers arbitrary input below 500, with a JSON reason', {
    concurrency: 4,
  }, async (t) => {
    const openapi = await send('GET', '/openapi.json', {});
    assert.equal(openapi.status, 200);
    const all = routesOf(JSON.parse(openapi.text));
    const routes = ONLY_ROUTE ? all.filter((r) => `${r.method} ${r.path}` === ONLY_ROUTE) : all;
    assert.ok(all.length >= 40, `the route table lists ${all.length} routes`);
    for (const expected of ['POST /verify', 'POST /v1/auth/otp/start', 'PUT /v1/users/{user_id}/claims']) {
      assert.ok(
        all.some((r) => `${r.method} ${r.path}` === expected),
        `${expected} is in the route table`,
      );
    }
    await fuzzRoutes(t, routes, { runs: RUNS[dialect], known, profiles, send });
  });

  // What the fuzz found, sent as found: regression tests.
  for (const failure of KNOWN_FAILURES) {
    if (failure.dialect !== undefined && failure.dialect !== dialect) continue;
    test(`regression: ${failure.was}`, async () => {
      const { method, path, profile, body } = await failure.example(server);
      check(path, await send(method, path, profiles[profile]!, body), quotable(profiles[profile]!, body));
    });
  }
});

/**
 * The operator API with its token (the suite above runs without one: every operator path is a 404
 * there). Its path ids are a project of its own, so that deleting it or replacing its secret
 * leaves the suite's other answers meaningful.
 */
eachDialect('fuzz: the operator API', (dialect) => {
  const token = 'fuzz-operator-token-0123456789abcdef';
  let server: TestServer;
  let known: Known;
  let profiles: Record<string, Record<string, string>>;

  before(async () => {
    server = await startServer(dialect, { env: { ...RELAXED_LIMITS, TESSERA_OPERATOR_TOKEN: token } });
    const operator = { authorization: `Bearer ${token}` };
    const target = await server.request('POST', '/v1/operator/projects', {
      body: { name: 'fuzz-target', origins: ['https://fuzz.example'] },
      headers: operator,
    });
    assert.equal(target.status, 201, target.text);
    const client = await server.request('POST', `/v1/operator/projects/${target.body.api_key_id}/clients`, {
      body: { redirect_uris: ['https://fuzz.example/cb'], client_name: 'fuzz' },
      headers: operator,
    });
    assert.equal(client.status, 201, client.text);
    known = {
      bodyLimit: server.config.bodyLimit,
      ids: { api_key_id: [target.body.api_key_id], client_id: [client.body.client_id] },
      strings: [target.body.api_key_id, client.body.client_id, 'https://fuzz.example', 'US', '*', ''],
    };
    profiles = {
      operator,
      none: {},
      'wrong token': { authorization: `Bearer ${token}x` },
      'the project’s Basic': { authorization: basicAuth(server.project) },
    };
  });
  after(() => server.close());

  test('every operator route answers arbitrary input below 500, with a JSON reason', {
    concurrency: 4,
  }, async (t) => {
    const openapi = await inject(server, 'GET', '/openapi.json', {});
    assert.equal(openapi.status, 200);
    const all = routesOf(JSON.parse(openapi.text)).filter((r) => r.path.startsWith('/v1/operator/'));
    const routes = ONLY_ROUTE ? all.filter((r) => `${r.method} ${r.path}` === ONLY_ROUTE) : all;
    for (const expected of ['PATCH /v1/operator/projects/{api_key_id}', 'POST /v1/operator/keys/rotate']) {
      assert.ok(
        all.some((r) => `${r.method} ${r.path}` === expected),
        `${expected} is in the route table`,
      );
    }
    // Found by this suite: replacing a client with the JSON body null was a 500.
    for (const text of ['null', '[]']) {
      const path = `/v1/operator/projects/${known.ids.api_key_id![0]}/clients/${known.ids.client_id![0]}`;
      const answer = await inject(server, 'PUT', path, profiles.operator!, {
        contentType: 'application/json',
        text,
      });
      assert.equal(answer.status, 400, answer.text);
      check(path, answer);
    }
    await fuzzRoutes(t, routes, {
      runs: RUNS[dialect],
      known,
      profiles,
      send: (...r) => inject(server, ...r),
      namesRefusedValues: true,
    });
    // The server's own project was never a target: it still works.
    const own = await server.request('GET', '/v1/project/branding', {
      headers: { authorization: basicAuth(server.project) },
    });
    assert.equal(own.status, 200, own.text);
  });
});
