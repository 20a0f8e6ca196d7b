/**
 * Property-based test of the POST /verify fast path (src/modules/verify/verify-fast-path.ts): for
 * ANY request, the answer over a real socket (the fast path, Fastify when it declines, or Fastify
 * through `inject` when it replays) must equal the answer of `app.inject` with the same method,
 * URL, headers and body (Fastify's pipeline only): status, body text and the headers compared in
 * verify-fast-path.test.ts.
 *
 * Requests are mostly POST /verify with bodies built around a real access token: the token as it
 * is, escaped, mutated, too long; every level of the body replaced by other JSON (arrays, null,
 * numbers, nested objects, extra and repeated keys, __proto__ / constructor / prototype, strings
 * with escapes, unicode and escaped lone surrogates); truncated or invalid JSON, invalid UTF-8,
 * whitespace, a BOM; sizes near 8192 (the token's bound) and 16 KiB (the fast path's cap and the
 * body limit). Headers vary the Content-Type, API_KEY_ID and Origin; some bodies are sent chunked,
 * and some requests miss the path or the method. SQLite only (the fast path does not read the
 * database for a token seen before). `TESSERA_TEST_FUZZ_SEED` replays another seed,
 * `TESSERA_TEST_FUZZ_RUNS` makes a longer run.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { decodeJwt, signJwt } from '../../src/tokens/jwt.js';
import { startServer, type TestServer, uniqueEmail } from '../helpers/harness.js';
import {
  type Answer,
  countVerifyRequests,
  injected,
  overSocket,
  type Sent,
} from '../helpers/verify-parity.js';

const SEED = Number(process.env.TESSERA_TEST_FUZZ_SEED) || 20_240_611;
/** Cases per property: 300 in all; `TESSERA_TEST_FUZZ_RUNS` sets the first for a longer run. */
const SHAPED = Number(process.env.TESSERA_TEST_FUZZ_RUNS) || 200;
const RUNS = { shaped: SHAPED, sized: Math.ceil(SHAPED * 0.3), nearMiss: Math.ceil(SHAPED * 0.2) } as const;

/** The fast path's cap and the server's default body limit (TESSERA_BODY_LIMIT), in bytes. */
const LIMIT = 16 * 1024;
/** The longest access token the route's schema takes, in UTF-16 code units. */
const MAX_TOKEN = 8192;

// ---------------------------------------------------------------------------------------------
// Bodies, as JSON text (so that repeated keys, __proto__ and escapes are sent as generated).

interface Known {
  /** A live access token of the server's project. */
  token: string;
  /**
   * Other tokens: its id and refresh tokens, another project's access token, a revoked one, and
   * ones signed here (expired, not yet valid, another issuer, an unknown key id).
   */
  others: string[];
  apiKeyId: string;
}

const text = (value: unknown) => JSON.stringify(value) ?? 'null';

/** JSON whitespace, mostly none. */
const ws = fc.constantFrom('', '', '', '', ' ', '\n', '\t', '\r\n', ' \n\t ');

/** A string's JSON text with some of its characters written as \uXXXX escapes (the same string). */
const escapedText = (value: string, every: number) =>
  `"${[...value]
    .map((c, i) =>
      i % every === 0 && c.length === 1
        ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`
        : text(c).slice(1, -1),
    )
    .join('')}"`;

/** JSON texts of strings that a plain JSON.parse and Fastify might read apart. */
const TRICKY_STRINGS = [
  '"\\u0000"',
  '"a\\u0000b"',
  '"\\u005f"',
  '"\\""',
  '"\\\\"',
  '"\\/"',
  '"\\ud800"',
  '"\\udc00x"',
  '"x\\ud83d"',
  '"\\ud83d\\ude00"',
  '"é😀中"',
  '"\\n\\t\\r\\b\\f"',
  '"__proto__"',
  '"constructor"',
  '"\\u005f_proto__"',
  '""',
];

const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'];

/** Strings JSON writes without an escape (which a body must lack for the fast path to judge it). */
const plain = (maxLength: number) =>
  fc.oneof(
    fc.string({ unit: fc.constantFrom(...'abcxyzAZ09_-. /:{}[],'), maxLength }),
    fc.string({ unit: 'grapheme', maxLength }).filter((s) => text(s) === `"${s}"`),
  );

/**
 * Bodies come in two kinds: "clean" ones, which the fast path judges itself (no escape, no
 * __proto__ or constructor, keys such as prototype and toString all the same), and "wild" ones,
 * with any of those, most of which it replays through Fastify.
 */
type Kind = 'clean' | 'wild';

/** An object key's JSON text. */
const keyText = (kind: Kind) =>
  fc.oneof(
    { weight: 6, arbitrary: plain(10).map(text) },
    { weight: 1, arbitrary: fc.constantFrom('prototype', 'toString', 'hasOwnProperty', 'valueOf').map(text) },
    { weight: kind === 'wild' ? 2 : 0, arbitrary: fc.string({ maxLength: 10 }).map(text) },
    { weight: kind === 'wild' ? 2 : 0, arbitrary: fc.constantFrom(...PROTO_KEYS).map(text) },
    {
      weight: kind === 'wild' ? 1 : 0,
      arbitrary: fc.constantFrom(
        '"\\u005f_proto__"',
        '"__proto\\u005f_"',
        '"\\u0063onstructor"',
        '"a\\u0000"',
        '"oauth_token"',
        '"access_token"',
      ),
    },
  );

/** Any JSON text, built from entries so that keys repeat and include __proto__ (when wild). */
function anyJson(depth: number, kind: Kind): fc.Arbitrary<string> {
  const wild = kind === 'wild' ? 1 : 0;
  const leaf = fc.oneof(
    { weight: 4, arbitrary: plain(20).map(text) },
    { weight: 2, arbitrary: fc.integer().map(text) },
    { weight: 1, arbitrary: fc.double().map(text) },
    {
      weight: 1,
      arbitrary: fc.constantFrom('1e309', '-0', '0.1e1', '123456789012345678901234567890', '1E2'),
    },
    { weight: 2, arbitrary: fc.boolean().map(text) },
    { weight: 2, arbitrary: fc.constant('null') },
    { weight: wild, arbitrary: fc.string({ maxLength: 20 }).map(text) },
    { weight: wild, arbitrary: fc.string({ unit: 'grapheme', maxLength: 10 }).map(text) },
    { weight: wild, arbitrary: fc.string({ unit: 'binary', maxLength: 10 }).map(text) },
    { weight: wild, arbitrary: fc.constantFrom(...TRICKY_STRINGS) },
  );
  if (depth === 0) return leaf;
  const inner = anyJson(depth - 1, kind);
  return fc.oneof(
    { weight: 3, arbitrary: leaf },
    {
      weight: 1,
      arbitrary: fc.array(inner, { maxLength: 4 }).map((items) => `[${items.join(',')}]`),
    },
    {
      weight: 2,
      arbitrary: fc
        .array(fc.tuple(keyText(kind), inner), { maxLength: 4 })
        .map((entries) => `{${entries.map(([k, v]) => `${k}:${v}`).join(',')}}`),
    },
    {
      weight: wild,
      arbitrary: fc.constantFrom(
        '{"__proto__":{"x":1}}',
        '{"constructor":{"prototype":{"x":1}}}',
        '{"constructor":1}',
        '{"prototype":{}}',
      ),
    },
  );
}

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** The token changed a little: a character flipped, cut short, a part dropped or doubled, …. */
function mutated(token: string): fc.Arbitrary<string> {
  const at = fc.nat({ max: token.length - 1 });
  const parts = token.split('.');
  return fc.oneof(
    fc.tuple(at, fc.constantFrom(...B64URL)).map(([i, c]) => `${token.slice(0, i)}${c}${token.slice(i + 1)}`),
    at.map((i) => token.slice(0, i)),
    at.map((i) => `${token.slice(0, i)}${token.slice(i + 1)}`),
    fc.string({ minLength: 1, maxLength: 8 }).map((s) => `${token}${s}`),
    fc.string({ minLength: 1, maxLength: 8 }).map((s) => `${s}${token}`),
    fc.constantFrom(
      parts.slice(0, 2).join('.'),
      `${parts[0]}.${parts[1]}.`,
      `${parts[0]}..${parts[2]}`,
      `.${parts[1]}.${parts[2]}`,
      [parts[1], parts[0], parts[2]].join('.'),
      `${token}.${parts[2]}`,
      ` ${token}`,
      `${token} `,
      token.toUpperCase(),
      `${parts[0]}.${parts[1]}.${parts[2]!.split('').reverse().join('')}`,
    ),
  );
}

/** A string of `length` UTF-16 code units made of `unit` (the last unit `x` when `unit` is two long). */
const ofUnits = (unit: string, length: number) =>
  unit.repeat(Math.floor(length / unit.length)) + 'x'.repeat(length % unit.length);

/** Strings of about 8192 code units: the schema's bound, in code units, with one, two and six bytes each. */
const nearTokenBound = (kind: Kind) =>
  fc
    .tuple(
      fc.integer({ min: MAX_TOKEN - 2, max: MAX_TOKEN + 2 }),
      kind === 'wild' ? fc.constantFrom('x', 'é', '😀', '"', '\u0000') : fc.constantFrom('x', 'é', '😀'),
    )
    .map(([length, unit]) => text(ofUnits(unit, length)));

/** The JSON text of `access_token`'s value. */
function accessTokenValue(token: string, others: string[], kind: Kind): fc.Arbitrary<string> {
  const wild = kind === 'wild' ? 1 : 0;
  return fc.oneof(
    { weight: 8, arbitrary: fc.constant(text(token)) },
    { weight: 2, arbitrary: fc.constantFrom(...others).map(text) },
    { weight: 4, arbitrary: mutated(token).map(text) },
    { weight: 1, arbitrary: fc.constantFrom(`"${token}é"`, '"not.a.token"', '""', '" "') },
    { weight: 1, arbitrary: plain(40).map(text) },
    { weight: 1, arbitrary: nearTokenBound(kind) },
    { weight: 1, arbitrary: anyJson(2, kind) },
    // The same token, with escapes: only Fastify is sure to read it, and reads it as the token.
    {
      weight: wild,
      arbitrary: fc.integer({ min: 1, max: 60 }).map((every) => escapedText(token, every)),
    },
    {
      weight: wild,
      arbitrary: fc.constantFrom(`"${token}\\u0000"`, `"${token}\\""`, `"${token}\\\\"`, `"${token}\\ud800"`),
    },
  );
}

/** `{"<key>":<value>, …}` with extra entries in any order, repeated keys, whitespace anywhere. */
function objectWith(
  key: fc.Arbitrary<string>,
  value: fc.Arbitrary<string>,
  kind: Kind,
): fc.Arbitrary<string> {
  const entry = (k: fc.Arbitrary<string>, v: fc.Arbitrary<string>) =>
    fc.tuple(ws, k, ws, ws, v, ws).map(([a, kk, b, c, vv, d]) => `${a}${kk}${b}:${c}${vv}${d}`);
  return fc
    .tuple(
      entry(key, value),
      fc.array(entry(keyText(kind), anyJson(1, kind)), { maxLength: 2 }),
      // A repeated key: JSON.parse and Fastify keep the last.
      fc.oneof(
        { weight: kind === 'wild' ? 5 : 15, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: entry(key, anyJson(1, kind)) },
      ),
    )
    .chain(([main, extra, repeated]) =>
      fc.shuffledSubarray([main, ...extra, ...(repeated === null ? [] : [repeated])], {
        minLength: 1 + extra.length + (repeated === null ? 0 : 1),
      }),
    )
    .map((entries) => `{${entries.join(',')}}`);
}

/** A key's JSON text: mostly the right one, sometimes wrong (or escaped, when wild). */
const keyLike = (name: string, kind: Kind) =>
  fc.oneof(
    { weight: kind === 'wild' ? 12 : 30, arbitrary: fc.constant(text(name)) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(text(name.toUpperCase()), text(`${name} `), text(name.replace('_', '-'))),
    },
    { weight: kind === 'wild' ? 1 : 0, arbitrary: fc.constantFrom(escapedText(name, 3), '"__proto__"') },
  );

/** A /verify body: the shape the schema takes, with any level replaced by other JSON. */
function shapedBody({ token, others }: Known, kind: Kind): fc.Arbitrary<string> {
  const holder = fc.oneof(
    {
      weight: kind === 'wild' ? 10 : 30,
      arbitrary: objectWith(keyLike('access_token', kind), accessTokenValue(token, others, kind), kind),
    },
    { weight: 1, arbitrary: anyJson(2, kind) },
    { weight: 1, arbitrary: fc.constantFrom(text(token), `[${text(token)}]`, 'null', '{}') },
  );
  const top = fc.oneof(
    { weight: kind === 'wild' ? 10 : 30, arbitrary: objectWith(keyLike('oauth_token', kind), holder, kind) },
    { weight: 1, arbitrary: anyJson(3, kind) },
    { weight: 1, arbitrary: holder.map((h) => `[${h}]`) },
  );
  return fc.tuple(ws, top, ws).map(([a, t, b]) => `${a}${t}${b}`);
}

/** The body's bytes, mostly as they are, sometimes broken. */
function broken(body: fc.Arbitrary<string>): fc.Arbitrary<Buffer> {
  const utf8 = (s: string) => Buffer.from(s, 'utf8');
  return fc.oneof(
    { weight: 24, arbitrary: body.map(utf8) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(body, fc.double({ min: 0, max: 1, noNaN: true }))
        .map(([b, at]) => utf8(b.slice(0, Math.floor(b.length * at)))),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(body, fc.constantFrom(',', '}', ']', '"', "'", 'x', '\u0000', '\\', '{'), fc.nat())
        .map(([b, c, at]) => {
          const i = at % (b.length + 1);
          return utf8(`${b.slice(0, i)}${c}${b.slice(i)}`);
        }),
    },
    { weight: 1, arbitrary: body.map((b) => utf8(`\uFEFF${b}`)) },
    { weight: 1, arbitrary: body.map((b) => utf8(`${b}x`)) },
    {
      weight: 1,
      // Invalid UTF-8: a lone continuation byte, a cut sequence, an encoded surrogate, 0xFF.
      arbitrary: fc
        .tuple(body, fc.constantFrom([0x80], [0xc3], [0xed, 0xa0, 0x80], [0xff], [0xe2, 0x82]), fc.nat())
        .map(([b, bytes, at]) => {
          const raw = utf8(b);
          const i = at % (raw.length + 1);
          return Buffer.concat([raw.subarray(0, i), Buffer.from(bytes), raw.subarray(i)]);
        }),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom('', ' ', '\n', '\t \r\n', 'null', '0', '"x"', '{', '[]').map(utf8),
    },
  );
}

/**
 * Bodies of a size near a bound: the whole body near 16 KiB (padded with a string, whitespace or
 * an extra key, in one- to four-byte characters), or the token near 8192 code units.
 */
function sizedBody(token: string): fc.Arbitrary<Buffer> {
  const near = fc.integer({ min: LIMIT - 3, max: LIMIT + 3 });
  const base = text({ oauth_token: { access_token: token } });
  const padded = fc
    .tuple(
      near,
      fc.constantFrom('x', 'é', '中', '😀', ' ', '\\u0041'),
      fc.constantFrom('top', 'holder', 'ws'),
    )
    .map(([bytes, unit, where]) => {
      const shell =
        where === 'top'
          ? (pad: string) => `{"oauth_token":{"access_token":${text(token)}},"pad":"${pad}"}`
          : where === 'holder'
            ? (pad: string) => `{"oauth_token":{"pad":"${pad}","access_token":${text(token)}}}`
            : (pad: string) => `${base}${' '.repeat(pad.length)}`;
      const room = bytes - Buffer.byteLength(shell(''));
      const unitBytes = Buffer.byteLength(unit);
      const pad =
        unit.repeat(Math.max(0, Math.floor(room / unitBytes))) + 'x'.repeat(Math.max(0, room % unitBytes));
      return Buffer.from(shell(where === 'ws' ? 'x'.repeat(Math.max(0, room)) : pad));
    });
  const longToken = fc
    .tuple(
      fc.integer({ min: MAX_TOKEN - 2, max: MAX_TOKEN + 2 }),
      fc.constantFrom('x', 'é', '😀', 'token'),
      fc.boolean(),
    )
    .map(([length, unit, extra]) => {
      const value =
        unit === 'token' ? (token + 'x'.repeat(MAX_TOKEN)).slice(0, length) : ofUnits(unit, length);
      return Buffer.from(
        `{"oauth_token":{"access_token":${text(value)}}${extra ? ',"a":[1,{"b":null}]' : ''}}`,
      );
    });
  return fc.oneof(padded, longToken);
}

// ---------------------------------------------------------------------------------------------
// Headers and the request line.

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=UTF-8',
  'application/json; charset="utf-8"',
  'application/json;charset=utf-8',
  'application/json ; charset=utf-8',
  'application/json;\tcharset=utf-8',
  'APPLICATION/JSON; CHARSET=UTF-8',
  'Application/Json',
  'application/json; charset=latin1',
  'application/json; charset=utf-8; foo=bar',
  'application/json; foo=bar',
  'application/json; charset="utf-8',
  'application/json; charset=utf-8"',
  'application/json;',
  'application/jsonx',
  'application/vnd.api+json',
  'text/plain',
  'text/plain; charset=utf-8',
  'application/x-www-form-urlencoded',
  '*/*',
  'json',
  '',
];

function headersFor(known: Known): fc.Arbitrary<Record<string, string>> {
  const contentType = fc.oneof(
    { weight: 10, arbitrary: fc.constant<string | undefined>('application/json') },
    { weight: 3, arbitrary: fc.constant<string | undefined>('application/json; charset=utf-8') },
    { weight: 3, arbitrary: fc.constantFrom<string | undefined>(...CONTENT_TYPES) },
    { weight: 1, arbitrary: fc.constant<string | undefined>(undefined) },
  );
  const apiKey = fc.oneof(
    { weight: 4, arbitrary: fc.constant<Record<string, string>>({}) },
    {
      weight: 3,
      arbitrary: fc.constantFrom<Record<string, string>>(
        { api_key_id: known.apiKeyId },
        { 'Api-Key-Id': known.apiKeyId },
        { API_KEY_ID: known.apiKeyId },
        { api_key_id: 'pk_other' },
        { api_key_id: '' },
        { 'api-key-id': '' },
        { api_key_id: known.apiKeyId, 'api-key-id': 'pk_other' },
        { api_key_id: 'pk_other', 'api-key-id': known.apiKeyId },
        { api_key_id: ` ${known.apiKeyId}x` },
      ),
    },
  );
  const origin = fc.oneof(
    { weight: 4, arbitrary: fc.constant<Record<string, string>>({}) },
    {
      weight: 2,
      arbitrary: fc.constantFrom<Record<string, string>>(
        { origin: 'https://anywhere.example' },
        { origin: 'http://app.test' },
        { Origin: 'null' },
        { origin: '' },
      ),
    },
  );
  const expect = fc.oneof(
    { weight: 20, arbitrary: fc.constant<Record<string, string>>({}) },
    { weight: 1, arbitrary: fc.constant<Record<string, string>>({ expect: '100-continue' }) },
  );
  return fc.tuple(contentType, apiKey, origin, expect).map(([type, key, from, more]) => ({
    ...more,
    ...(type === undefined ? {} : { 'content-type': type }),
    ...key,
    ...from,
  }));
}

type Framing = Pick<Sent, 'chunkedAt' | 'lengthText'>;

/** Content-Length mostly (sometimes with leading zeros); sometimes chunked, split anywhere. */
const framing = (body: Buffer | undefined): fc.Arbitrary<Framing> =>
  body === undefined || body.length === 0
    ? fc.constant({})
    : fc.oneof(
        { weight: 14, arbitrary: fc.constant({}) },
        { weight: 1, arbitrary: fc.constant({ lengthText: `00${body.length}` }) },
        { weight: 1, arbitrary: fc.nat({ max: body.length }).map((chunkedAt) => ({ chunkedAt })) },
      );

function requestOf(
  known: Known,
  line: fc.Arbitrary<{ method: string; path: string }>,
  body: fc.Arbitrary<Buffer | undefined>,
): fc.Arbitrary<Sent> {
  return fc.tuple(line, headersFor(known), body).chain(([{ method, path }, all, b]) => {
    // Expect without a body: Node's client sends the head at once, so a POST goes out chunked
    // (an empty chunked body, which inject cannot send); a difference of the client's framing.
    const { expect, ...rest } = all;
    const headers = b === undefined || expect === undefined ? rest : all;
    return framing(b).map((frame): Sent => ({ method, path, headers, body: b, ...frame }));
  });
}

const POST_VERIFY = fc.constant({ method: 'POST', path: '/verify' });

/**
 * Near misses of the method and path. No dot segment (`/x/../verify`): inject resolves it as a
 * URL (light-my-request) and reaches the route, while over a socket Fastify's router answers 404
 * whether or not the fast path is there (it declines any other URL), a difference of inject's.
 */
const NEAR_MISS = fc.oneof(
  fc
    .constantFrom(
      '/verify/',
      '/Verify',
      '/VERIFY',
      '/verify?x=1',
      '/verify?',
      '/%76erify',
      '/verifyx',
      '/verif',
      '/verify;x',
    )
    .map((path) => ({ method: 'POST', path })),
  fc
    .constantFrom('GET', 'HEAD', 'PUT', 'PATCH', 'DELETE', 'OPTIONS')
    .map((method) => ({ method, path: '/verify' })),
);

// ---------------------------------------------------------------------------------------------

describe('POST /verify fast path: any request, the same answer over a socket as through inject [sqlite]', () => {
  let server: TestServer;
  let known: Known;
  /** Requests routed to POST /verify by Fastify: those its pipeline answered. */
  const routed = countVerifyRequests();
  const tally = { cases: 0, aheadOfFastify: 0, answersAhead: new Map<string, number>() };

  before(async () => {
    server = await startServer('sqlite', {
      env: { TESSERA_RATE_LIMIT_IP: '100000/60' },
      onRoute: routed.onRoute,
    });
    const bundle = await server.signIn(uniqueEmail('fast-fuzz'));
    const other = await server.ctx.projects.create({ name: 'other', origins: ['http://other.test'] });
    const elsewhere = await server.signIn(uniqueEmail('fast-fuzz'), other);
    const revoked = await server.signIn(uniqueEmail('fast-fuzz'));
    const revoking = await server.request('POST', '/oauth/revoke', {
      body: { token: revoked.refresh_token, client_id: server.project.api_key_id },
    });
    assert.equal(revoking.status, 200, revoking.text);
    const key = server.ctx.keys.signingKey();
    const decoded = decodeJwt(bundle.access_token)!;
    const now = Math.floor(Date.now() / 1000);
    const forged = (header: Record<string, unknown>, claims: Record<string, unknown>) =>
      signJwt({ ...decoded.header, ...header }, { ...decoded.payload, ...claims }, key.privateKey);
    known = {
      token: bundle.access_token,
      others: [
        bundle.id_token,
        bundle.refresh_token,
        elsewhere.access_token,
        revoked.access_token,
        forged({}, { iat: now - 7200, exp: now - 3600 }),
        forged({}, { iat: now + 3600, exp: now + 7200 }),
        forged({}, { iss: 'https://elsewhere.example' }),
        forged({ kid: 'not-a-known-kid' }, {}),
        forged({}, { aud: 'pk_nobody' }),
      ],
      apiKeyId: server.project.api_key_id,
    };
  });
  after(() => server.close());

  /** A request as it can be read (and pasted): the token and project id named, long bodies cut. */
  const shown = (sent: Sent) => {
    const hide = (s: string) =>
      s.split(known.token).join('<token>').split(known.apiKeyId).join('<api_key_id>');
    const body = sent.body === undefined ? undefined : hide(sent.body.toString('utf8'));
    return JSON.stringify({
      ...sent,
      headers: JSON.parse(hide(JSON.stringify(sent.headers))),
      body:
        body !== undefined && body.length > 300
          ? `${body.slice(0, 300)}… (${sent.body!.length} bytes)`
          : body,
    });
  };

  /** Sends `sent` over a socket, then through inject: the same answer. */
  async function same(sent: Sent): Promise<Answer> {
    const before = routed.count;
    const socket = await overSocket(server.url, sent);
    const ahead = sent.method === 'POST' && sent.path === '/verify' && routed.count === before;
    const direct = await injected(server, sent);
    tally.cases++;
    if (ahead) {
      tally.aheadOfFastify++;
      tally.answersAhead.set(socket.text, (tally.answersAhead.get(socket.text) ?? 0) + 1);
    }
    assert.deepEqual(socket, direct, `socket (actual) and inject (expected) differ for ${shown(sent)}`);
    return socket;
  }

  async function holds(input: fc.Arbitrary<Sent>, numRuns: number): Promise<void> {
    const details = await fc.check(
      // Unbiased: the weights above, not fast-check's preference for small values, set the mix.
      fc.asyncProperty(fc.noBias(input), async (sent) => {
        await same(sent);
      }),
      { numRuns, seed: SEED },
    );
    if (details.failed) {
      // fast-check's own report would print the body as a Buffer's bytes: the request as text instead.
      const cause = details.errorInstance instanceof Error ? details.errorInstance.message : '';
      const counterexample = details.counterexample?.[0];
      assert.fail(
        `property failed after ${details.numRuns} runs, shrunk ${details.numShrinks} times ` +
          `(seed ${details.seed}, path "${details.counterexamplePath}")\n` +
          `request: ${counterexample ? shown(counterexample) : '?'}\n${cause}`,
      );
    }
  }

  test('bodies shaped around a real token, whole or broken, with any headers', async () => {
    await holds(
      requestOf(
        known,
        POST_VERIFY,
        broken(
          fc.oneof(
            { weight: 3, arbitrary: shapedBody(known, 'clean') },
            { weight: 2, arbitrary: shapedBody(known, 'wild') },
          ),
        ).map((b): Buffer | undefined => b),
      ),
      RUNS.shaped,
    );
  });

  test('bodies near the 16 KiB cap and body limit, tokens near 8192 code units', async () => {
    await holds(
      requestOf(
        known,
        POST_VERIFY,
        sizedBody(known.token).map((b): Buffer | undefined => b),
      ),
      RUNS.sized,
    );
  });

  test('near misses of the path and the method', async () => {
    const body = fc.option(
      shapedBody(known, 'clean').map((b) => Buffer.from(b)),
      { freq: 4, nil: undefined },
    );
    await holds(requestOf(known, NEAR_MISS, body), RUNS.nearMiss);
  });

  test('the fuzz reached the fast path: a good share answered by it, with several verdicts', (t) => {
    if (tally.cases === 0) return t.skip('no request was sent (a filtered run)');
    t.diagnostic(`seed ${SEED}: ${tally.cases} requests, ${tally.aheadOfFastify} answered ahead of Fastify`);
    for (const [answer, count] of tally.answersAhead) t.diagnostic(`  ${count} × ${answer}`);
    assert.ok(tally.aheadOfFastify >= tally.cases / 6, `${tally.aheadOfFastify} answered ahead of Fastify`);
    assert.ok(tally.answersAhead.has('{"success":true}'), 'some valid token was answered ahead of Fastify');
    assert.ok(tally.answersAhead.size >= 4, [...tally.answersAhead.keys()].join('\n'));
  });
});
