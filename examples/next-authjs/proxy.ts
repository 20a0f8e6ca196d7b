// proxy.ts
import { type NextFetchEvent, type NextRequest, NextResponse } from 'next/server';
import { auth } from '@/auth';

// Auth.js's middleware reads the session, which runs the jwt callback of auth.ts (renewing the
// tokens when the access token has expired), and answers with the session cookie to set.
const session = auth((_request: NextRequest, _event: NextFetchEvent) => NextResponse.next());

// A Server Component cannot set cookies, and auth() there reads the cookie the request came with:
// after a renewal here, the page would renew again with the refresh token just spent, which Tessera
// takes for a stolen token (it revokes the session). So the page gets the renewed cookie too.
export async function proxy(request: NextRequest, event: NextFetchEvent) {
  const answer = await session(request, event);
  const setCookies = answer?.headers.getSetCookie() ?? [];
  const headers = new Headers(request.headers);
  headers.set('cookie', applied(request.headers.get('cookie') ?? '', setCookies));
  const response = NextResponse.next({ request: { headers } });
  for (const line of setCookies) response.headers.append('set-cookie', line);
  return response;
}

/** The Cookie header as the browser sends it once it has applied `setCookies`. */
function applied(cookie: string, setCookies: string[]): string {
  const jar = new Map<string, string>();
  for (const pair of cookie.split(/;\s*/).filter(Boolean)) {
    const eq = pair.indexOf('=');
    jar.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  for (const line of setCookies) {
    const [pair = '', ...attributes] = line.split(';');
    const eq = pair.indexOf('=');
    const [name, value] = [pair.slice(0, eq).trim(), pair.slice(eq + 1).trim()];
    if (value === '' || attributes.some((a) => /^\s*max-age=0\s*$/i.test(a))) jar.delete(name);
    else jar.set(name, value);
  }
  return [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
}

export const config = { matcher: ['/((?!api/auth|_next/static|_next/image|favicon.ico).*)'] };
