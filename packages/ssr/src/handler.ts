import { type CookieJar, cookieJar, type SessionCookies } from './cookies.js';
import { CSRF_FIELD, CSRF_HEADER, checkCsrf, ensureCsrfToken, rotateCsrfToken } from './csrf.js';
import { TesseraSsrError } from './errors.js';
import { isLocalPath, type ResolvedOptions } from './options.js';
import { PROXY_ROUTES, pickFields } from './routes.js';
import { publicUser, type SessionStore } from './session.js';
import { bundleOf, type CallContext, type TesseraApi } from './tessera-api.js';

const MAX_BODY = 64 * 1024;

/** A parsed request body and whether it came from an HTML form (answered with redirects). */
interface Posted {
  fields: Record<string, unknown>;
  form: boolean;
}

export interface HandlerDeps {
  config: ResolvedOptions;
  cookies: SessionCookies;
  sessions: SessionStore;
  api: TesseraApi;
}

/**
 * Answers the auth routes under `basePath`; null for any other path. Every POST passes the CSRF
 * checks first. JSON bodies get JSON answers; HTML form posts get `303` redirects (to `redirect_to`,
 * or `error_to` with `?error=code`, both paths on this site). A failed form post that named a
 * challenge (a wrong code) carries its `challenge_id` back to `error_to`, so the page can ask for
 * the code again instead of starting over (which Tessera's resend interval would refuse).
 */
export async function handleAuthRequest(
  deps: HandlerDeps,
  request: Request,
  context: CallContext = {},
): Promise<Response | null> {
  const { config } = deps;
  const path = new URL(request.url).pathname;
  if (path !== config.basePath && !path.startsWith(`${config.basePath}/`)) return null;
  const route = path.slice(config.basePath.length);
  const jar = cookieJar(request.headers.get('cookie'));
  let posted: Posted = { fields: {}, form: false };
  try {
    if (request.method === 'GET' && route === '/session') return await sessionRoute(deps, jar);
    if (
      request.method !== 'POST' ||
      !(route in PROXY_ROUTES || route === '/refresh' || route === '/logout')
    ) {
      throw new TesseraSsrError(404, 'not_found', 'No such auth route');
    }
    posted = await readBody(request);
    const submitted = request.headers.get(CSRF_HEADER) ?? posted.fields[CSRF_FIELD];
    checkCsrf(request, jar, deps.cookies, config, typeof submitted === 'string' ? submitted : undefined);
    if (route === '/refresh') return await refreshRoute(deps, jar);
    if (route === '/logout') return await logoutRoute(deps, jar, posted);
    return await proxyRoute(deps, jar, route, posted, context);
  } catch (error) {
    if (!(error instanceof TesseraSsrError)) throw error;
    return failure(deps, jar, error, posted);
  }
}

async function sessionRoute(deps: HandlerDeps, jar: CookieJar): Promise<Response> {
  const session = await deps.sessions.get(jar);
  const csrf = ensureCsrfToken(jar, deps.cookies, deps.config.refreshCookieMaxAge);
  return json(jar, 200, { user: publicUser(session), csrf_token: csrf });
}

async function refreshRoute(deps: HandlerDeps, jar: CookieJar): Promise<Response> {
  const session = await deps.sessions.get(jar);
  if (!session) throw new TesseraSsrError(401, 'not_signed_in', 'No session to renew');
  return json(jar, 200, { user: publicUser(session), expires_at: session.expiresAt });
}

async function logoutRoute(deps: HandlerDeps, jar: CookieJar, posted: Posted): Promise<Response> {
  const refresh = jar.get(deps.cookies.names.refresh) || jar.get(deps.cookies.names.access);
  let revoked = false;
  if (refresh) {
    try {
      await deps.api.revoke(refresh);
      revoked = true;
    } catch {
      // The cookies go anyway: the browser is signed out even if the service could not be told.
    }
  }
  deps.sessions.clear(jar);
  rotateCsrfToken(jar, deps.cookies, deps.config.refreshCookieMaxAge);
  if (posted.form) return redirect(jar, target(posted.fields.redirect_to, deps.config.afterSignOut));
  return json(jar, 200, { revoked });
}

async function proxyRoute(
  deps: HandlerDeps,
  jar: CookieJar,
  path: string,
  posted: Posted,
  context: CallContext,
): Promise<Response> {
  const route = PROXY_ROUTES[path]!;
  const picked = pickFields(route, posted.fields);
  if (!picked.ok) throw new TesseraSsrError(400, 'bad_request', `"${picked.field}" is missing or invalid`);
  const body = route.signIn ? { ...picked.value, getOAuthToken: true } : picked.value;
  const answer = await deps.api.call(route.upstream, body, context);
  if (!route.signIn) {
    if (!posted.form) return json(jar, 200, answer);
    const next = new URL(target(posted.fields.redirect_to, deps.config.errorPage), 'http://x');
    if (typeof answer.challenge_id === 'string') next.searchParams.set('challenge_id', answer.challenge_id);
    return redirect(jar, next.pathname + next.search);
  }
  const session = await deps.sessions.store(jar, bundleOf(answer));
  const csrf = rotateCsrfToken(jar, deps.cookies, deps.config.refreshCookieMaxAge);
  if (posted.form) return redirect(jar, target(posted.fields.redirect_to, deps.config.afterSignIn));
  return json(jar, 200, { user: publicUser(session), csrf_token: csrf });
}

function failure(deps: HandlerDeps, jar: CookieJar, error: TesseraSsrError, posted: Posted): Response {
  if (posted.form) {
    const back = new URL(target(posted.fields.error_to, deps.config.errorPage), 'http://x');
    const challenge = posted.fields.challenge_id;
    if (typeof challenge === 'string' && challenge !== '' && challenge.length <= 256) {
      back.searchParams.set('challenge_id', challenge);
    }
    back.searchParams.set('error', error.code);
    return redirect(jar, back.pathname + back.search);
  }
  return json(jar, error.status, { error: error.code, message: error.message });
}

/**
 * The body as text, read chunk by chunk and given up past MAX_BODY bytes: a chunked body declares
 * no length, and reading it whole first would let anyone make the server hold any amount.
 */
async function boundedText(request: Request): Promise<string> {
  if (!request.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY) {
      await reader.cancel().catch(() => undefined);
      throw new TesseraSsrError(413, 'bad_request', 'The body is too large');
    }
    chunks.push(value);
  }
  const decoder = new TextDecoder();
  return chunks.map((chunk, i) => decoder.decode(chunk, { stream: i < chunks.length - 1 })).join('');
}

async function readBody(request: Request): Promise<Posted> {
  const declared = Number(request.headers.get('content-length') ?? '0');
  if (declared > MAX_BODY) throw new TesseraSsrError(413, 'bad_request', 'The body is too large');
  const text = await boundedText(request);
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') {
    return { fields: Object.fromEntries(new URLSearchParams(text)), form: true };
  }
  if (type === 'application/json' || (type === '' && text === '')) {
    let parsed: unknown = {};
    try {
      if (text !== '') parsed = JSON.parse(text);
    } catch {
      throw new TesseraSsrError(400, 'bad_request', 'The body is not valid JSON');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new TesseraSsrError(400, 'bad_request', 'The body must be a JSON object');
    }
    return { fields: parsed as Record<string, unknown>, form: false };
  }
  throw new TesseraSsrError(415, 'bad_request', 'Send application/json or a form');
}

function target(given: unknown, fallback: string): string {
  return isLocalPath(given) ? given : fallback;
}

function json(jar: CookieJar, status: number, body: unknown): Response {
  const headers = new Headers({ 'content-type': 'application/json', 'cache-control': 'no-store' });
  for (const value of jar.setCookies()) headers.append('set-cookie', value);
  return new Response(JSON.stringify(body), { status, headers });
}

function redirect(jar: CookieJar, location: string): Response {
  const headers = new Headers({ location, 'cache-control': 'no-store' });
  for (const value of jar.setCookies()) headers.append('set-cookie', value);
  return new Response(null, { status: 303, headers });
}
