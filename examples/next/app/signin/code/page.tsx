import { csrfTokenOf } from '@tessera/ssr/next';
import { cookies } from 'next/headers';
import Link from 'next/link';
import { Suspense } from 'react';
import { tessera } from '@/lib/tessera';

type Search = Promise<Record<string, string | string[] | undefined>>;

export default function EnterCode({ searchParams }: { searchParams: Search }) {
  return (
    <>
      <h1>Enter your code</h1>
      <Suspense fallback={<p>Loading…</p>}>
        <CodeForm searchParams={searchParams} />
      </Suspense>
      <p>
        <Link href="/signin">Use another address or get a new code</Link>
      </p>
    </>
  );
}

// A wrong code comes back here (error_to) with the same challenge_id and ?error=invalid_code.
async function CodeForm({ searchParams }: { searchParams: Search }) {
  const { challenge_id: challengeId, error, next } = await searchParams;
  const target = typeof next === 'string' ? next : '/account';
  const csrfToken = csrfTokenOf(tessera, await cookies()) ?? '';
  return (
    <form method="post" action="/auth/otp/complete">
      {typeof error === 'string' && (
        <p role="alert" data-testid="error">
          Error: {error}
        </p>
      )}
      <input type="hidden" name="csrf_token" value={csrfToken} />
      <input type="hidden" name="challenge_id" value={typeof challengeId === 'string' ? challengeId : ''} />
      <input type="hidden" name="redirect_to" value={target} />
      <input type="hidden" name="error_to" value={`/signin/code?next=${encodeURIComponent(target)}`} />
      <label>
        Code
        <input name="code" inputMode="numeric" autoComplete="one-time-code" required />
      </label>
      <button type="submit">Sign in</button>
    </form>
  );
}
