// @jsxRuntime automatic
import type { OtpChallenge } from '@tessera/client';
import { useSession, useSignIn } from '@tessera/react';
import { type FormEvent, useEffect, useState } from 'react';

/** The whole UI: who is signed in, an OTP sign-in in two steps, sign-out. */
export function App() {
  const { status, user, signOut } = useSession();
  if (status === 'loading') return <p data-testid="loading">Loading…</p>;
  if (user) {
    return (
      <section data-testid="signed-in">
        <p>
          Signed in as <span data-testid="identifier">{user.identifier}</span> (
          <span data-testid="method">{user.authMethod}</span>)
        </p>
        <button type="button" onClick={() => void signOut()}>
          Sign out
        </button>
        <button type="button" onClick={() => void signOut('global')}>
          Sign out on every device
        </button>
      </section>
    );
  }
  return <SignInForm />;
}

function SignInForm() {
  const { otp, passkey, pending, error } = useSignIn();
  const [challenge, setChallenge] = useState<OtpChallenge | null>(null);
  // Passkeys offered in the e-mail field's autofill while the form shows (aborted on unmount).
  useEffect(() => {
    passkey({ autofill: true }).catch(() => {});
  }, [passkey]);
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    const run = challenge
      ? otp.complete(challenge.challengeId, String(data.get('code')))
      : otp.start(String(data.get('identifier'))).then(setChallenge);
    run.catch(() => {}); // shown through `error`
  };
  return (
    <form data-testid="signed-out" onSubmit={submit}>
      {challenge ? (
        <label>
          Code <input name="code" inputMode="numeric" autoComplete="one-time-code" required />
        </label>
      ) : (
        <label>
          E-mail <input name="identifier" autoComplete="username webauthn" required />
        </label>
      )}
      <button type="submit" disabled={pending}>
        {challenge ? 'Sign in' : 'Send me a code'}
      </button>
      {error ? <p role="alert">{(error as { code?: string }).code ?? 'error'}</p> : null}
    </form>
  );
}
