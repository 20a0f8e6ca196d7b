import { redirect } from 'next/navigation';
import { auth, sessionTokens, tessera } from '@/auth';
import { signInWithTessera, signOutEverywhere } from '../actions';

export default async function Account() {
  const session = await auth();
  if (!session?.user) redirect('/');
  if (session.error === 'RefreshTokenError') {
    return (
      <>
        <h1>Your account</h1>
        <p role="alert" data-testid="session-ended">
          Your session has ended. Sign in again.
        </p>
        <form action={signInWithTessera}>
          <button type="submit">Sign in with Tessera</button>
        </form>
      </>
    );
  }
  // An API called with the session's access token (renewed by proxy.ts once expired): userinfo.
  const tokens = await sessionTokens();
  const answer = await fetch((await tessera()).userinfo_endpoint, {
    headers: { authorization: `Bearer ${tokens?.access_token}` },
    cache: 'no-store',
  });
  const userinfo: { sub: string; email?: string } | null = answer.ok ? await answer.json() : null;
  return (
    <>
      <h1>Your account</h1>
      <dl>
        <dt>Signed in as</dt>
        <dd data-testid="email">{session.user.email}</dd>
        <dt>Tessera's userinfo, asked with the access token</dt>
        <dd data-testid="userinfo">{userinfo ? userinfo.email : `refused (${answer.status})`}</dd>
        <dt>The access token is valid until</dt>
        <dd data-testid="expires-at">{new Date((tokens?.expires_at ?? 0) * 1000).toISOString()}</dd>
      </dl>
      <form action={signOutEverywhere}>
        <button type="submit">Sign out</button>
      </form>
    </>
  );
}
