// app/actions.ts
'use server';
import { redirect } from 'next/navigation';
import { sessionTokens, signIn, signOut, tessera } from '@/auth';

export async function signInWithTessera() {
  await signIn('tessera', { redirectTo: '/account' });
}

/** Signs out of the app, then of Tessera (RP-initiated logout), which sends the user back home. */
export async function signOutEverywhere() {
  const tokens = await sessionTokens();
  await signOut({ redirect: false });
  if (!tokens?.id_token) redirect('/');
  const logout = new URL((await tessera()).end_session_endpoint);
  logout.search = new URLSearchParams({
    id_token_hint: tokens.id_token,
    post_logout_redirect_uri: new URL('/', process.env.AUTH_URL).href,
  }).toString();
  redirect(logout.href);
}
