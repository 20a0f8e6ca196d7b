// The authorization code flow as a browser and a client make it, over HTTP only: the full flow on
// Tessera as an autocannon workload, code minters for Tessera and oidc-provider (through their
// real sign-in pages, before any measured window), and the code exchange workload both servers
// are measured with. See bench/README.md, "The OIDC figures".
import { createHash, randomBytes } from 'node:crypto';
import type autocannon from 'autocannon';
import { Pool } from 'undici';
import { type Counter, headerOf, type Workload } from './load.js';
import { PROVIDER_CLIENT, REDIRECT_URI, SCOPE } from './oidc-shared.js';
import { OTP_CODE_HEADER } from './protocol.js';

type Request = autocannon.Request;

/** A code ready to exchange, with the PKCE verifier of its authorization request. */
export interface MintedCode {
  code: string;
  verifier: string;
}

const FORM = 'application/x-www-form-urlencoded';
/** What a browser sends with every page request that the pages read. */
const BROWSER = { accept: 'text/html', 'accept-language': 'en' };

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** An authorization request's path and query (`code`, PKCE S256, state and nonce), as an RP builds it. */
function authorizePath(
  path: string,
  clientId: string,
  challenge: string,
  extra: Record<string, string> = {},
) {
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope: SCOPE,
    state: randomBytes(12).toString('base64url'),
    nonce: randomBytes(12).toString('base64url'),
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...extra,
  });
  return `${path}?${query}`;
}

const UNESCAPE: Record<string, string> = {
  '&amp;': '&',
  '&quot;': '"',
  '&#39;': "'",
  '&lt;': '<',
  '&gt;': '>',
};

/** The hidden fields of the form of `html` that posts to `action` (empty when there is none). */
export function formFields(html: string, action: string): Record<string, string> {
  const start = html.indexOf(`action="${action}"`);
  if (start < 0) return {};
  const form = html.slice(start, html.indexOf('</form>', start));
  const out: Record<string, string> = {};
  for (const match of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    out[match[1]!] = match[2]!.replace(/&(?:amp|quot|#39|lt|gt);/g, (e) => UNESCAPE[e]!);
  return out;
}

/** The `code` of a redirect to the client (`REDIRECT_URI?code=…&state=…&iss=…`), if it is one. */
function codeOf(location: string | undefined): string | undefined {
  if (!location?.startsWith(REDIRECT_URI)) return undefined;
  return new URL(location).searchParams.get('code') ?? undefined;
}

/** `name=value` of each Set-Cookie (attributes dropped). */
function cookiePairs(setCookie: string | string[] | undefined): string[] {
  if (setCookie === undefined) return [];
  return (Array.isArray(setCookie) ? setCookie : [setCookie]).map((line) => line.split(';')[0]!);
}

/** The token request of RFC 6749 §4.1.3 for a public client (PKCE), form-encoded. */
function tokenBody(clientId: string, minted: MintedCode): string {
  return new URLSearchParams({
    grant_type: 'authorization_code',
    client_id: clientId,
    code: minted.code,
    redirect_uri: REDIRECT_URI,
    code_verifier: minted.verifier,
  }).toString();
}

const counter = (): Counter => ({ ok: 0, failed: 0 });

interface FlowContext {
  verifier?: string;
  cookie?: string;
  signIn?: string;
  fields?: Record<string, string>;
  otp?: string | undefined;
  code?: string | undefined;
}

/**
 * (h) Tessera's full flow, one new browser and one new user per iteration: GET /oauth/authorize
 * (PKCE S256) → 303 to the hosted sign-in page → its identifier form (POST /oauth/sign-in/start;
 * the code comes back in the bench header) → the code form (POST /oauth/sign-in/complete) → 303 to
 * the client with the code → POST /oauth/token. Five requests; counts the flows that ended in tokens.
 * A step that fails sends the connection back to the first request (a setupRequest returning null).
 */
export function tesseraFlows(url: string, clientId: string, prefix: string): Workload {
  const c = counter();
  let n = 0;
  const fail = () => {
    c.failed++;
  };
  const skip = null as unknown as Request;
  const requests: Request[] = [
    {
      method: 'GET',
      headers: BROWSER,
      setupRequest: (req, context) => {
        const ctx = context as FlowContext;
        const { verifier, challenge } = pkce();
        ctx.verifier = verifier;
        req.path = authorizePath('/oauth/authorize', clientId, challenge);
        return req;
      },
      onResponse: (status, _body, context, headers) => {
        const ctx = context as FlowContext;
        const location = headerOf(headers, 'location');
        if (status !== 303 || !location?.startsWith('/oauth/sign-in?')) return fail();
        ctx.signIn = location;
        ctx.cookie = cookiePairs(headers?.['set-cookie'] as string | string[] | undefined).join('; ');
      },
    },
    {
      method: 'GET',
      setupRequest: (req, context) => {
        const ctx = context as FlowContext;
        if (!ctx.signIn || !ctx.cookie) return skip;
        req.path = ctx.signIn;
        req.headers = { ...BROWSER, cookie: ctx.cookie };
        return req;
      },
      onResponse: (status, body, context) => {
        const ctx = context as FlowContext;
        ctx.fields = status === 200 ? formFields(body, '/oauth/sign-in/start') : undefined;
        if (!ctx.fields?.csrf) fail();
      },
    },
    {
      method: 'POST',
      path: '/oauth/sign-in/start',
      setupRequest: (req, context) => {
        const ctx = context as FlowContext;
        if (!ctx.fields?.csrf) return skip;
        req.headers = { ...BROWSER, cookie: ctx.cookie!, 'content-type': FORM };
        req.body = new URLSearchParams({
          ...ctx.fields,
          identifier: `${prefix}-${n++}@bench.example.com`,
        }).toString();
        return req;
      },
      onResponse: (status, body, context, headers) => {
        const ctx = context as FlowContext;
        ctx.fields = status === 200 ? formFields(body, '/oauth/sign-in/complete') : undefined;
        ctx.otp = headerOf(headers, OTP_CODE_HEADER);
        if (!ctx.fields?.challenge_id || !ctx.otp) fail();
      },
    },
    {
      method: 'POST',
      path: '/oauth/sign-in/complete',
      setupRequest: (req, context) => {
        const ctx = context as FlowContext;
        if (!ctx.fields?.challenge_id || !ctx.otp) return skip;
        req.headers = { ...BROWSER, cookie: ctx.cookie!, 'content-type': FORM };
        req.body = new URLSearchParams({ ...ctx.fields, code: ctx.otp }).toString();
        return req;
      },
      onResponse: (status, _body, context, headers) => {
        const ctx = context as FlowContext;
        ctx.code = status === 303 ? codeOf(headerOf(headers, 'location')) : undefined;
        if (!ctx.code) fail();
      },
    },
    {
      method: 'POST',
      path: '/oauth/token',
      headers: { 'content-type': FORM },
      setupRequest: (req, context) => {
        const ctx = context as FlowContext;
        if (!ctx.code || !ctx.verifier) return skip;
        req.body = tokenBody(clientId, { code: ctx.code, verifier: ctx.verifier });
        return req;
      },
      onResponse: (status, body) => {
        if (status === 200 && body.includes('"id_token"')) c.ok++;
        else fail();
      },
    },
  ];
  return { url, requests, counter: c };
}

/**
 * (i) and (j) POST of the code exchange at `path`, each request taking the next minted code (codes
 * work once: a pool that runs dry fails visibly, each request after that one failure). Counts the
 * answers that carry an ID token.
 */
export function codeExchanges(
  url: string,
  path: string,
  clientId: string,
  codes: MintedCode[],
): Workload & { used(): number; firstFailure(): string | undefined } {
  const c = counter();
  let used = 0;
  let first: string | undefined;
  const request: Request = {
    method: 'POST',
    path,
    headers: { 'content-type': FORM },
    setupRequest: (req) => {
      const minted = codes[used++] ?? { code: 'pool-exhausted', verifier: 'x'.repeat(43) };
      req.body = tokenBody(clientId, minted);
      return req;
    },
    onResponse: (status, body) => {
      if (status === 200 && body.includes('"id_token"')) c.ok++;
      else {
        c.failed++;
        first ??= `${status} ${body.slice(0, 200)}`;
      }
    },
  };
  return { url, requests: [request], counter: c, used: () => used, firstFailure: () => first };
}

/** A browser of one flow: a cookie jar (no paths: each flow's cookies have distinct names) over a pool. */
class FlowBrowser {
  readonly #jar = new Map<string, string>();

  constructor(private readonly pool: Pool) {}

  async go(path: string, form?: Record<string, string>) {
    const headers: Record<string, string> = { ...BROWSER };
    if (this.#jar.size > 0) headers.cookie = [...this.#jar].map(([k, v]) => `${k}=${v}`).join('; ');
    if (form) headers['content-type'] = FORM;
    const response = await this.pool.request({
      method: form ? 'POST' : 'GET',
      path,
      headers,
      ...(form ? { body: new URLSearchParams(form).toString() } : {}),
    });
    for (const pair of cookiePairs(response.headers['set-cookie'])) {
      const eq = pair.indexOf('=');
      this.#jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    const text = await response.body.text();
    const location = response.headers.location;
    return {
      status: response.statusCode,
      text,
      headers: response.headers,
      location: typeof location === 'string' ? location : undefined,
    };
  }
}

/** Runs `flow` `count` times, `concurrency` at a time, on one connection pool; the codes it got. */
async function mint(
  url: string,
  count: number,
  concurrency: number,
  flow: (browser: FlowBrowser, n: number) => Promise<MintedCode>,
): Promise<MintedCode[]> {
  const pool = new Pool(url, { connections: concurrency, headersTimeout: 10_000, bodyTimeout: 10_000 });
  const out: MintedCode[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) out.push(await flow(new FlowBrowser(pool), next++));
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    await pool.close();
  }
  return out;
}

const expect = (step: string, ok: boolean, answer: { status: number; text: string }) => {
  if (!ok) throw new Error(`${step} answered ${answer.status}: ${answer.text.slice(0, 300)}`);
};

/**
 * Codes of Tessera's client, each through the flow of `tesseraFlows` up to the code (a new user
 * and browser each): for the code exchange figure, minted before its window.
 */
export function mintTesseraCodes(
  url: string,
  clientId: string,
  count: number,
  prefix: string,
  concurrency = 16,
): Promise<MintedCode[]> {
  return mint(url, count, concurrency, async (browser, n) => {
    const { verifier, challenge } = pkce();
    const authorized = await browser.go(authorizePath('/oauth/authorize', clientId, challenge));
    expect('/oauth/authorize', authorized.status === 303 && !!authorized.location, authorized);
    const page = await browser.go(authorized.location!);
    expect('/oauth/sign-in', page.status === 200, page);
    const started = await browser.go('/oauth/sign-in/start', {
      ...formFields(page.text, '/oauth/sign-in/start'),
      identifier: `${prefix}-${n}@bench.example.com`,
    });
    const otp = started.headers[OTP_CODE_HEADER];
    expect('/oauth/sign-in/start', started.status === 200 && typeof otp === 'string', started);
    const done = await browser.go('/oauth/sign-in/complete', {
      ...formFields(started.text, '/oauth/sign-in/complete'),
      code: otp as string,
    });
    const code = codeOf(done.location);
    expect('/oauth/sign-in/complete', done.status === 303 && !!code, done);
    return { code: code!, verifier };
  });
}

/**
 * Codes of oidc-provider's client through its development interactions: GET /auth → its login
 * (POST /interaction/:uid, any login) → /auth/:uid → its consent (POST /interaction/:uid) →
 * /auth/:uid → the redirect with the code. `prompt=consent` because oidc-provider grants
 * `offline_access` (a refresh token) only when consent was prompted for.
 */
export function mintProviderCodes(
  url: string,
  count: number,
  prefix: string,
  concurrency = 16,
): Promise<MintedCode[]> {
  const path = (location: string | undefined) => (location ? new URL(location, url).pathname : '');
  return mint(url, count, concurrency, async (browser, n) => {
    const { verifier, challenge } = pkce();
    let answer = await browser.go(
      authorizePath('/auth', PROVIDER_CLIENT.client_id, challenge, {
        prompt: 'consent',
        scope: `${SCOPE} ${PROVIDER_CLIENT.resourceScope}`,
      }),
    );
    for (const prompt of ['login', 'consent']) {
      const interaction = path(answer.location);
      expect(`/auth (before ${prompt})`, interaction.startsWith('/interaction/'), answer);
      const submitted = await browser.go(interaction, { prompt, login: `${prefix}-${n}@bench.example.com` });
      const resume = path(submitted.location);
      expect(`${prompt} submission`, resume.startsWith('/auth/'), submitted);
      answer = await browser.go(resume);
    }
    const code = codeOf(answer.location);
    expect('/auth (after consent)', !!code, answer);
    return { code: code!, verifier };
  });
}
