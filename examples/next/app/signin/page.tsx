import { csrfTokenOf } from '@tessera/ssr/next';
import { cookies } from 'next/headers';
import { Suspense } from 'react';
import { tessera } from '@/lib/tessera';

type Search = Promise<Record<string, string | string[] | undefined>>;

export default function SignIn({ searchParams }: { searchParams: Search }) {
  return (
    <>
      <h1>Sign in</h1>
      <Suspense fallback={<p>Loading…</p>}>
        <SignInForm searchParams={searchParams} />
      </Suspense>
    </>
  );
}

// The form posts to @tessera/ssr's auth route; it answers with a redirect to the code page, which
// carries on where the visitor was going (the auth routes follow paths on this site only).
async function SignInForm({ searchParams }: { searchParams: Search }) {
  const { error, redirect_to: next } = await searchParams;
  const codePage = `/signin/code?next=${encodeURIComponent(typeof next === 'string' ? next : '/account')}`;
  const csrfToken = csrfTokenOf(tessera, await cookies()) ?? '';
  return (
    <form method="post" action="/auth/otp/start">
      {typeof error === 'string' && (
        <p role="alert" data-testid="error">
          Error: {error}
        </p>
      )}
      <input type="hidden" name="csrf_token" value={csrfToken} />
      <input type="hidden" name="redirect_to" value={codePage} />
      <input type="hidden" name="error_to" value="/signin" />
      <label>
        E-mail or phone
        <input name="identifier" autoComplete="username" required />
      </label>
      <button type="submit">Send me a code</button>
    </form>
  );
}
