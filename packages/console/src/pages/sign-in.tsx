import type { TesseraClient } from '@tessera/client';
import { SignIn } from '@tessera/react';
import { type ReactNode, useEffect, useRef, useState } from 'react';
import { fill, locale, t } from '../i18n/index.js';

/**
 * The console's sign-in: `<tessera-sign-in>` for the built-in console project (passkey, or a code
 * by e-mail), with the console's own client, so the session it starts is the console's. No offers
 * after a code: a passkey is added from the member's account page.
 */
export function SignInPage(props: { client: TesseraClient }): ReactNode {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = fill(t.documentTitle, { page: t.signInTitle });
  }, []);
  return (
    <main className="center">
      <h1 ref={heading}>{t.signInTitle}</h1>
      <p className="muted">{t.signInText}</p>
      <SignIn client={props.client} offers={false} locale={locale} />
    </main>
  );
}

/** Signed in, but not a member of the console: how to become one, and signing out. */
export function NoAccess(props: { client: TesseraClient; signOut(): Promise<void> }): ReactNode {
  const [identifier, setIdentifier] = useState('');
  useEffect(() => {
    document.title = fill(t.documentTitle, { page: t.noAccessTitle });
    void props.client.getClaims().then((claims) => setIdentifier(claims?.identifier ?? ''));
  }, [props.client]);
  return (
    <main className="center">
      <h1>{t.noAccessTitle}</h1>
      <p>{fill(t.noAccessText, { identifier: identifier || '…' })}</p>
      <pre className="code">{`tessera console grant ${identifier || '<email>'} viewer --project <name>`}</pre>
      <button type="button" onClick={() => void props.signOut()}>
        {t.signOut}
      </button>
    </main>
  );
}
