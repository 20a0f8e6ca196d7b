import { readSession } from '@tessera/ssr/next';
import { cookies } from 'next/headers';
import Link from 'next/link';
import { Suspense } from 'react';
import { tessera } from '@/lib/tessera';

export default function Home() {
  return (
    <>
      <h1>Tessera Next.js example</h1>
      <Suspense fallback={<p>Loading…</p>}>
        <Status />
      </Suspense>
    </>
  );
}

async function Status() {
  const session = await readSession(tessera, await cookies());
  if (!session) {
    return (
      <p data-testid="signed-out">
        You are signed out. <Link href="/signin">Sign in</Link>
      </p>
    );
  }
  return (
    <p data-testid="signed-in">
      Signed in as {session.user.identifier}. <Link href="/account">Account</Link>
    </p>
  );
}
