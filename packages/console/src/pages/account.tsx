import type { Passkey } from '@tessera/client';
import { type ReactNode, useState } from 'react';
import { RemoveButton } from '../components/confirm.js';
import { StackTable } from '../components/table.js';
import { ActionButton, Field, Loaded, PageTitle, Time, useResource } from '../components/ui.js';
import { useConsole } from '../context.js';
import { fill, t } from '../i18n/index.js';

/** Why a passkey could not be added, in words (the client's stable codes). */
function passkeyFailure(error: unknown): string {
  const code = (error as { code?: string } | null)?.code;
  if (code === 'passkey_cancelled') return t.passkeyCancelled;
  if (code === 'passkey_unavailable') return t.passkeyUnavailable;
  return t.passkeyFailed;
}

/**
 * The member's own account: who they are, their role in each project, and their passkeys for the
 * console (add one after a first sign-in by code; remove one they no longer have).
 */
export function AccountPage(): ReactNode {
  const { client, me, notify } = useConsole();
  const passkeys = useResource(() => client.passkeys.list(), [client]);
  const [name, setName] = useState('');
  const [error, setError] = useState('');
  const add = async () => {
    setError('');
    try {
      await client.passkeys.register(name.trim() || undefined);
      setName('');
      notify(t.passkeyAdded);
      passkeys.reload();
    } catch (e) {
      setError(passkeyFailure(e));
    }
  };
  return (
    <>
      <PageTitle>{t.accountTitle}</PageTitle>
      <section className="card" aria-labelledby="account-who">
        <h2 id="account-who">{t.accountWho}</h2>
        <dl className="facts">
          <dt>{t.identifier}</dt>
          <dd>{me.identifier}</dd>
          <dt>{t.roles}</dt>
          <dd>
            {me.operator ? (
              t.role_operator
            ) : (
              <ul>
                {me.projects.map((p) => (
                  <li key={p.api_key_id}>{fill(t.roleIn, { role: t[`role_${p.role}`], project: p.name })}</li>
                ))}
              </ul>
            )}
          </dd>
        </dl>
      </section>
      <section className="card" aria-labelledby="account-passkeys">
        <h2 id="account-passkeys">{t.yourPasskeys}</h2>
        <p className="muted">{t.yourPasskeysText}</p>
        <Loaded resource={passkeys}>
          {(list: Passkey[]) => (
            <StackTable
              caption={t.yourPasskeys}
              empty={<p>{t.noPasskeysYet}</p>}
              rows={list}
              rowKey={(p) => p.passkeyId}
              columns={[
                { label: t.name, cell: (p) => p.name },
                { label: t.created, cell: (p) => <Time at={p.createdAt} /> },
                { label: t.lastUsed, cell: (p) => <Time at={p.lastUsedAt} /> },
              ]}
              actions={(p) => (
                <RemoveButton
                  name={p.name}
                  title={t.removePasskeyTitle}
                  text={fill(t.removeOwnPasskeyText, { name: p.name })}
                  action={async () => {
                    await client.passkeys.remove(p.passkeyId);
                    notify(t.passkeyRemoved);
                    passkeys.reload();
                  }}
                />
              )}
            />
          )}
        </Loaded>
        <h3>{t.addPasskey}</h3>
        <form
          className="inline-form"
          onSubmit={(event) => {
            event.preventDefault();
          }}
        >
          <Field label={t.passkeyName} hint={t.passkeyNameHint} error={error || undefined}>
            {({ id, describedBy, invalid }) => (
              <input
                id={id}
                value={name}
                maxLength={64}
                aria-describedby={describedBy}
                aria-invalid={invalid || undefined}
                onChange={(event) => setName(event.target.value)}
              />
            )}
          </Field>
          <ActionButton action={add}>{t.addPasskey}</ActionButton>
        </form>
      </section>
    </>
  );
}
