import { csrfTokenOf, readSession } from '@tessera/ssr/next';
import { cookies } from 'next/headers';
import { redirect } from 'next/navigation';
import { Suspense } from 'react';
import { tessera } from '@/lib/tessera';

export default function AccountPage() {
  return (
    <>
      <h1>Account</h1>
      <Suspense fallback={<p>Loading…</p>}>
        <Account />
      </Suspense>
    </>
  );
}

// A protected Server Component: proxy.ts already sent signed-out visitors to /signin; checking
// here too keeps the page safe if the matcher ever misses it.
async function Account() {
  const store = await cookies();
  const session = await readSession(tessera, store);
  if (!session) redirect('/signin?redirect_to=/account');
  const { user, expiresAt } = session;
  return (
    <>
      <dl>
        <dt>Identifier</dt>
        <dd data-testid="identifier">{user.identifier}</dd>
        <dt>User id</dt>
        <dd data-testid="user-id">{user.id}</dd>
        <dt>Signed in with</dt>
        <dd data-testid="method">{user.authMethod}</dd>
        <dt>Access token valid until</dt>
        <dd data-testid="expires">{new Date(expiresAt).toISOString()}</dd>
      </dl>
      <form method="post" action="/auth/logout">
        <input type="hidden" name="csrf_token" value={csrfTokenOf(tessera, store) ?? ''} />
        <input type="hidden" name="redirect_to" value="/" />
        <button type="submit">Sign out</button>
      </form>
    </>
  );
}
