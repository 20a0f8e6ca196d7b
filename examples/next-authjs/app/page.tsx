import { auth } from '@/auth';
import { signInWithTessera } from './actions';

export default async function Home() {
  const session = await auth();
  return (
    <>
      <h1>Auth.js with Tessera</h1>
      {session?.user ? (
        <p data-testid="signed-in">
          Signed in as {session.user.email}. <a href="/account">Your account</a>
        </p>
      ) : (
        <>
          <p data-testid="signed-out">You are signed out.</p>
          <form action={signInWithTessera}>
            <button type="submit">Sign in with Tessera</button>
          </form>
        </>
      )}
    </>
  );
}
