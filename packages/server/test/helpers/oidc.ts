import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { basicAuth, type TestServer } from './harness.js';

/** Registers an OAuth client of the server's project through the integrator API. */
export async function registerClient(server: TestServer, metadata: Record<string, unknown>) {
  const answer = await server.request('POST', '/v1/clients', {
    body: { client_name: 'Test app', ...metadata },
    headers: { authorization: basicAuth(server.project) },
  });
  assert.equal(answer.status, 201, answer.text);
  return answer.body as { client_id: string; client_secret?: string; redirect_uris: string[] };
}

export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** A browser of sorts: a cookie jar (name=value, per issuer) and fetch without following redirects. */
export class Browser {
  readonly cookies = new Map<string, string>();

  /** `headers`: sent with every request (e.g. `x-forwarded-for` before a trusting server). */
  constructor(
    readonly origin: string,
    readonly headers: Record<string, string> = {},
  ) {}

  async go(
    url: string,
    init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {},
  ) {
    const target = url.startsWith('http') ? url : `${this.origin}${url}`;
    const headers: Record<string, string> = { 'accept-language': 'en', ...this.headers, ...init.headers };
    if (this.cookies.size > 0)
      headers.cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    let body: string | undefined;
    if (init.form) {
      body = new URLSearchParams(init.form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const response = await fetch(target, {
      method: init.method ?? (init.form ? 'POST' : 'GET'),
      headers,
      body,
      redirect: 'manual',
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (/Max-Age=0/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      text,
      location: response.headers.get('location') ?? undefined,
    };
  }
}

/** The hidden fields of the first form of a page posting to `action`. */
export function formFields(html: string, action: string): Record<string, string> {
  const start = html.indexOf(`action="${action}"`);
  assert.ok(start >= 0, `no form to ${action} in ${html.slice(0, 400)}`);
  const form = html.slice(start, html.indexOf('</form>', start));
  const out: Record<string, string> = {};
  for (const match of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    out[match[1]!] = match[2]!
      .replace(/&amp;/g, '&')
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>');
  return out;
}

export function authorizeUrl(params: Record<string, string>): string {
  return `/oauth/authorize?${new URLSearchParams(params).toString()}`;
}

/**
 * Signs in on the hosted pages from a 303 to /oauth/sign-in: identifier, then the code from the
 * development outbox. Returns the answer of the code step (a redirect, or the consent page's 303).
 */
export async function signInOnHostedPages(
  server: TestServer,
  browser: Browser,
  signInLocation: string,
  email: string,
) {
  assert.match(signInLocation, /^\/oauth\/sign-in\?request_id=/);
  const page = await browser.go(signInLocation);
  assert.equal(page.status, 200, page.text);
  const started = await browser.go('/oauth/sign-in/start', {
    form: { ...formFields(page.text, '/oauth/sign-in/start'), identifier: email },
  });
  assert.equal(started.status, 200, started.text);
  const fields = formFields(started.text, '/oauth/sign-in/complete');
  return browser.go('/oauth/sign-in/complete', { form: { ...fields, code: server.lastCode(email) } });
}

/** The query parameters of a redirect's Location. */
export const redirectParams = (location: string | undefined) => {
  assert.ok(location, 'a redirect was expected');
  return Object.fromEntries(new URL(location).searchParams);
};

/** The token endpoint's form POST (RFC 6749 §4.1.3): `fields` as sent, a form body. */
export const tokenRequest = (
  server: TestServer,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
) =>
  server.request('POST', '/oauth/token', {
    raw: new URLSearchParams(fields).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  });

/** A public client's code exchange at `redirectUri`; `extra` adds or replaces fields. */
export const exchangeCode = (
  server: TestServer,
  clientId: string,
  redirectUri: string,
  code: string,
  verifier: string,
  extra: Record<string, string> = {},
) =>
  tokenRequest(server, {
    grant_type: 'authorization_code',
    client_id: clientId,
    code,
    redirect_uri: redirectUri,
    code_verifier: verifier,
    ...extra,
  });

/**
 * The whole flow for a first-party public client: authorize (with `resource` if given), sign in on
 * the hosted pages (or reuse the browser's session), exchange the code. Returns the token answer.
 */
export async function codeFlowTokens(
  server: TestServer,
  browser: Browser,
  options: { clientId: string; redirectUri: string; email: string; scope?: string; resource?: string },
) {
  const { verifier, challenge } = pkce();
  const start = await browser.go(
    authorizeUrl({
      response_type: 'code',
      client_id: options.clientId,
      redirect_uri: options.redirectUri,
      scope: options.scope ?? 'openid email',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...(options.resource ? { resource: options.resource } : {}),
    }),
  );
  assert.equal(start.status, 303, start.text);
  const done = start.location?.startsWith('/oauth/sign-in')
    ? await signInOnHostedPages(server, browser, start.location, options.email)
    : start;
  const { code } = redirectParams(done.location);
  assert.ok(code, `no code in ${done.location}`);
  const tokens = await exchangeCode(server, options.clientId, options.redirectUri, code, verifier, {
    ...(options.resource ? { resource: options.resource } : {}),
  });
  assert.equal(tokens.status, 200, tokens.text);
  return tokens.body as { access_token: string; id_token?: string; refresh_token?: string };
}
