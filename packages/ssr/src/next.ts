/**
 * `@tessera/ssr/next` — Next.js App Router helpers (Next 15 and 16). Runtimes: both of Next's —
 * Node.js (`proxy.ts`, route handlers, Server Components) and Edge (`middleware.ts`, Next 15's
 * default; `export const runtime = 'edge'`): Web APIs and Web Crypto only, no `node:` module.
 *
 * @packageDocumentation
 */
import { cookieJar } from './cookies.js';
import type { TesseraSession } from './session.js';
import type { TesseraSsr } from './tessera-ssr.js';

/**
 * What Next's `cookies()` from `next/headers` gives a Server Component (a read-only store).
 *
 * @example
 * ```ts
 * const store: ReadonlyCookieStore = await cookies();
 * ```
 */
export interface ReadonlyCookieStore {
  get(name: string): { value: string } | undefined;
}

/**
 * What {@link middlewareSession} returns for Next's `middleware.ts`.
 *
 * @example
 * ```ts
 * const { requestHeaders, setCookies, session }: MiddlewareSession = await middlewareSession(tessera, request);
 * ```
 */
export interface MiddlewareSession {
  session: TesseraSession | null;
  /** The request headers to pass on with `NextResponse.next({ request: { headers } })`: their
   * `Cookie` holds the renewed cookies, so Server Components rendering this request see them. */
  requestHeaders: Headers;
  /** `Set-Cookie` values to append to the response, so the browser stores the renewed cookies. */
  setCookies: string[];
}

/**
 * Route handlers for `app/auth/[...tessera]/route.ts` (the auth routes under `basePath`).
 *
 * @example
 * ```ts
 * // app/auth/[...tessera]/route.ts
 * import { routeHandlers } from '@tessera/ssr/next';
 * import { tessera } from '@/lib/tessera';
 *
 * export const { GET, POST } = routeHandlers(tessera);
 * ```
 */
export function routeHandlers(tessera: TesseraSsr): {
  GET: (request: Request) => Promise<Response>;
  POST: (request: Request) => Promise<Response>;
} {
  const handle = async (request: Request) => {
    const clientAddress = request.headers.get('x-forwarded-for')?.split(',').at(-1)?.trim() || undefined;
    return (
      (await tessera.handle(request, { clientAddress })) ??
      Response.json({ error: 'not_found', message: 'No such auth route' }, { status: 404 })
    );
  };
  return { GET: handle, POST: handle };
}

/**
 * Renews the session in Next's `proxy.ts` (`middleware.ts` before Next 16), the one place of the
 * App Router that can both read the request and set cookies before Server Components render; it
 * also sets the CSRF cookie that {@link csrfTokenOf} reads. Next's own objects are not needed: pass
 * the request, then hand the results to `NextResponse`. Runs in both of Next's runtimes: Node.js
 * (`proxy.ts`) and Edge (`middleware.ts`, Next 15's default).
 *
 * @example
 * ```ts
 * // proxy.ts (Next 16; on Next 15 name it middleware.ts and the function middleware)
 * import { middlewareSession } from '@tessera/ssr/next';
 * import { type NextRequest, NextResponse } from 'next/server';
 * import { tessera } from '@/lib/tessera';
 *
 * export async function proxy(request: NextRequest) {
 *   const { requestHeaders, setCookies } = await middlewareSession(tessera, request);
 *   const response = NextResponse.next({ request: { headers: requestHeaders } });
 *   for (const value of setCookies) response.headers.append('set-cookie', value);
 *   return response;
 * }
 * export const config = { matcher: ['/((?!_next/static|_next/image|favicon.ico|auth/).*)'] };
 * ```
 */
export async function middlewareSession(tessera: TesseraSsr, request: Request): Promise<MiddlewareSession> {
  const jar = cookieJar(request.headers.get('cookie'));
  const session = await tessera.getSession(jar);
  tessera.csrfToken(jar);
  const requestHeaders = new Headers(request.headers);
  requestHeaders.set('cookie', jar.cookieHeader());
  return { session, requestHeaders, setCookies: jar.setCookies() };
}

/**
 * Reads the session in a Server Component (or a Server Action) from Next's `cookies()`. It never
 * renews — a Server Component cannot set cookies — so run {@link middlewareSession} in `proxy.ts`
 * (`middleware.ts` before Next 16) to keep the access cookie fresh.
 *
 * It first awaits Next's `connection()` (Next 15 and later): verifying the token reads the clock,
 * which Next allows only once rendering waits for a request — with `cacheComponents` on, reading it
 * earlier logs "used `Date.now()`… while prerendering". As with `cookies()`, render the component
 * that calls it inside `<Suspense>` when `cacheComponents` is on. Outside a Next app (no `next`
 * installed) it just reads.
 *
 * @example
 * ```tsx
 * // app/account/page.tsx
 * import { readSession } from '@tessera/ssr/next';
 * import { cookies } from 'next/headers';
 * import { redirect } from 'next/navigation';
 * import { Suspense } from 'react';
 * import { tessera } from '@/lib/tessera';
 *
 * export default function Page() {
 *   return <Suspense fallback={<p>Loading…</p>}><Account /></Suspense>;
 * }
 * async function Account() {
 *   const session = await readSession(tessera, await cookies());
 *   if (!session) redirect('/signin');
 *   return <p>Signed in as {session.user.identifier}</p>;
 * }
 * ```
 */
export async function readSession(
  tessera: TesseraSsr,
  store: ReadonlyCookieStore,
): Promise<TesseraSession | null> {
  await requestTime();
  return tessera.getSession({ get: (name) => store.get(name)?.value });
}

/** Next's `connection()`: resolves once a request is being answered (never while prerendering). */
async function requestTime(): Promise<void> {
  let next: typeof import('next/server');
  try {
    next = await import('next/server');
  } catch {
    return; // not a Next app: nothing is prerendered
  }
  // Next 14 has no connection(); there the cookies() read already made the page dynamic.
  if (typeof next.connection === 'function') await next.connection();
}

/**
 * The CSRF token for a form rendered by a Server Component, to post to the auth routes (sign-in,
 * sign-out) as the hidden field `csrf_token`. The cookie is set by {@link middlewareSession} in
 * `proxy.ts`; null when the browser has none yet (the page is not under the proxy's matcher).
 *
 * @example
 * ```tsx
 * <form method="post" action="/auth/logout">
 *   <input type="hidden" name="csrf_token" value={csrfTokenOf(tessera, await cookies()) ?? ''} />
 *   <button type="submit">Sign out</button>
 * </form>
 * ```
 */
export function csrfTokenOf(tessera: TesseraSsr, store: ReadonlyCookieStore): string | null {
  return store.get(tessera.cookieNames.csrf)?.value ?? null;
}
