import { middlewareSession } from '@tessera/ssr/next';
import { type NextRequest, NextResponse } from 'next/server';
import { tessera } from '@/lib/tessera';

// Runs before every page: renews the session (a Server Component cannot set cookies), sets the
// CSRF cookie the forms need, and sends a signed-out visitor of /account to the sign-in page.
export async function proxy(request: NextRequest) {
  const { session, requestHeaders, setCookies } = await middlewareSession(tessera, request);
  const { pathname } = request.nextUrl;
  const response =
    !session && pathname.startsWith('/account')
      ? NextResponse.redirect(new URL(`/signin?redirect_to=${encodeURIComponent(pathname)}`, request.url))
      : NextResponse.next({ request: { headers: requestHeaders } });
  for (const value of setCookies) response.headers.append('set-cookie', value);
  return response;
}

export const config = { matcher: ['/((?!_next/static|_next/image|favicon.ico|auth/).*)'] };
