import { type ReactNode, useEffect, useRef, useState } from 'react';
import type { AuditEvent, Device, Passkey, Session, UserDetail } from '../api/types.js';
import { parseClaims } from '../claims.js';
import { ConfirmButton } from '../components/confirm.js';
import {
  ActionButton,
  Badge,
  ErrorNotice,
  errorText,
  Field,
  Loaded,
  PageTitle,
  Time,
  useResource,
} from '../components/ui.js';
import { useConsole, useProject } from '../context.js';
import { fill, t } from '../i18n/index.js';
import { Link, navigate, pathOf, withQuery } from '../router.js';
import { AuditTable } from './audit.js';

const METHOD: Record<string, keyof typeof t> = {
  OTP: 'methodOtp',
  BIOMETRIC: 'methodPasskey',
  TRUSTED_DEVICE: 'methodDevice',
  PIN: 'methodPin',
};
export const methodText = (method: string): string =>
  METHOD[method] ? (t[METHOD[method]] as string) : method;

function Sessions(props: { user: UserDetail; reload(): void }): ReactNode {
  const { api, can, notify } = useConsole();
  const project = useProject();
  const live = props.user.sessions.filter((s) => !s.revoked_at);
  return (
    <section className="card" aria-labelledby="user-sessions">
      <h2 id="user-sessions">{t.sessions}</h2>
      {live.length === 0 ? (
        <p>{t.noSessions}</p>
      ) : (
        <table className="stack">
          <caption className="sr-only">{t.sessions}</caption>
          <thead>
            <tr>
              <th scope="col">{t.method}</th>
              <th scope="col">{t.client}</th>
              <th scope="col">{t.ipNetwork}</th>
              <th scope="col">{t.started}</th>
              <th scope="col">{t.lastRefreshed}</th>
            </tr>
          </thead>
          <tbody>
            {live.map((s: Session) => (
              <tr key={s.session_id}>
                <td data-label={t.method}>{methodText(s.auth_method)}</td>
                <td data-label={t.client} className="mono">
                  {s.client_id ?? t.projectItself}
                </td>
                <td data-label={t.ipNetwork} className="mono">
                  {s.ip_network ?? t.unknown}
                </td>
                <td data-label={t.started}>
                  <Time at={s.created_at} />
                </td>
                <td data-label={t.lastRefreshed}>
                  <Time at={s.last_refreshed_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {can('sessions.revoke') && live.length > 0 && (
        <div className="actions">
          <ConfirmButton
            title={t.signOutEverywhereTitle}
            text={<p>{fill(t.signOutEverywhereText, { identifier: props.user.identifier })}</p>}
            confirm={t.signOutEverywhere}
            action={async () => {
              await api.users.revokeSessions(project, props.user.user_id);
              notify(t.sessionsRevoked);
              props.reload();
            }}
          >
            {t.signOutEverywhere}
          </ConfirmButton>
        </div>
      )}
    </section>
  );
}

function Methods(props: { user: UserDetail; reload(): void }): ReactNode {
  const { api, can, notify } = useConsole();
  const project = useProject();
  const { user } = props;
  const remove = can('credentials.remove');
  return (
    <section className="card" aria-labelledby="user-methods">
      <h2 id="user-methods">{t.signInMethods}</h2>
      <h3>{t.trustedDevices}</h3>
      {user.devices.length === 0 ? (
        <p>{t.noDevices}</p>
      ) : (
        <table className="stack">
          <caption className="sr-only">{t.trustedDevices}</caption>
          <thead>
            <tr>
              <th scope="col">{t.name}</th>
              <th scope="col">{t.added}</th>
              <th scope="col">{t.lastUsed}</th>
              {remove && (
                <th scope="col">
                  <span className="sr-only">{t.actions}</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {user.devices.map((d: Device) => (
              <tr key={d.device_id}>
                <td data-label={t.name}>{d.name || t.unnamed}</td>
                <td data-label={t.added}>
                  <Time at={d.created_at} />
                </td>
                <td data-label={t.lastUsed}>
                  <Time at={d.last_used_at} />
                </td>
                {remove && (
                  <td>
                    <ConfirmButton
                      title={t.removeDeviceTitle}
                      text={<p>{fill(t.removeDeviceText, { name: d.name || t.unnamed })}</p>}
                      confirm={t.remove}
                      aria-label={fill(t.removeNamed, { name: d.name || t.unnamed })}
                      action={async () => {
                        await api.users.removeDevice(project, user.user_id, d.device_id);
                        notify(t.deviceRemoved);
                        props.reload();
                      }}
                    >
                      {t.remove}
                    </ConfirmButton>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3>{t.passkeys}</h3>
      {user.passkeys.length === 0 ? (
        <p>{t.noPasskeys}</p>
      ) : (
        <table className="stack">
          <caption className="sr-only">{t.passkeys}</caption>
          <thead>
            <tr>
              <th scope="col">{t.name}</th>
              <th scope="col">{t.kind}</th>
              <th scope="col">{t.added}</th>
              <th scope="col">{t.lastUsed}</th>
              {remove && (
                <th scope="col">
                  <span className="sr-only">{t.actions}</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {user.passkeys.map((p: Passkey) => (
              <tr key={p.passkey_id}>
                <td data-label={t.name}>{p.name || t.unnamed}</td>
                <td data-label={t.kind}>{p.backed_up ? t.passkeySynced : t.passkeyDeviceBound}</td>
                <td data-label={t.added}>
                  <Time at={p.created_at} />
                </td>
                <td data-label={t.lastUsed}>
                  <Time at={p.last_used_at} />
                </td>
                {remove && (
                  <td>
                    <ConfirmButton
                      title={t.removePasskeyTitle}
                      text={<p>{fill(t.removePasskeyText, { name: p.name || t.unnamed })}</p>}
                      confirm={t.remove}
                      aria-label={fill(t.removeNamed, { name: p.name || t.unnamed })}
                      action={async () => {
                        await api.users.removePasskey(project, user.user_id, p.passkey_id);
                        notify(t.passkeyRemoved);
                        props.reload();
                      }}
                    >
                      {t.remove}
                    </ConfirmButton>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3>{t.pin}</h3>
      <p>
        {!user.pin.set ? (
          <Badge tone="warn">{t.pinNotSet}</Badge>
        ) : user.pin.locked ? (
          <Badge tone="bad">{t.pinLocked}</Badge>
        ) : (
          <Badge tone="ok">{t.pinSet}</Badge>
        )}
      </p>
      {user.pin.locked && can('pin.unlock') && (
        <ActionButton
          variant="secondary"
          action={async () => {
            try {
              await api.users.unlockPin(project, user.user_id);
              notify(t.pinUnlocked);
              props.reload();
            } catch (error) {
              notify(errorText(error));
            }
          }}
        >
          {t.unlockPin}
        </ActionButton>
      )}
    </section>
  );
}

function ClaimsEditor(props: { userId: string }): ReactNode {
  const { api, can, notify } = useConsole();
  const project = useProject();
  const claims = useResource(() => api.users.claims(project, props.userId), [api, project, props.userId]);
  const [text, setText] = useState('');
  const [error, setError] = useState('');
  const editor = useRef<HTMLTextAreaElement>(null);
  useEffect(() => {
    if (claims.data) setText(JSON.stringify(claims.data.claims, null, 2));
  }, [claims.data]);
  const editable = can('claims.write');
  const save = async () => {
    const parsed = parseClaims(text);
    if ('error' in parsed) {
      setError(parsed.error);
      editor.current?.focus();
      return;
    }
    setError('');
    try {
      const saved = await api.users.setClaims(project, props.userId, parsed.claims);
      setText(JSON.stringify(saved.claims, null, 2));
      notify(t.claimsSaved);
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <section className="card" aria-labelledby="user-claims">
      <h2 id="user-claims">{t.customClaims}</h2>
      <Loaded resource={claims}>
        {() =>
          editable ? (
            <form
              onSubmit={(event) => {
                event.preventDefault();
                void save();
              }}
            >
              <Field label={t.claimsJson} hint={t.claimsHint} error={error || undefined}>
                {({ id, describedBy, invalid }) => (
                  <textarea
                    id={id}
                    name="claims"
                    value={text}
                    spellCheck={false}
                    rows={8}
                    aria-describedby={describedBy}
                    aria-invalid={invalid || undefined}
                    onChange={(event) => setText(event.target.value)}
                    ref={editor}
                  />
                )}
              </Field>
              <ActionButton action={save}>{t.saveClaims}</ActionButton>
            </form>
          ) : (
            <pre className="code">{text}</pre>
          )
        }
      </Loaded>
    </section>
  );
}

function Trail(props: { userId: string }): ReactNode {
  const { api } = useConsole();
  const project = useProject();
  const events = useResource(
    () => api.audit.list(project, { user_id: props.userId, limit: 20 }),
    [api, project, props.userId],
  );
  return (
    <section className="card" aria-labelledby="user-audit">
      <h2 id="user-audit">{t.auditTrail}</h2>
      <Loaded resource={events}>
        {(page: { events: AuditEvent[] }) => <AuditTable events={page.events} showUser={false} />}
      </Loaded>
      <p>
        <Link to={withQuery(pathOf({ name: 'audit', project }), { user: props.userId })}>
          {t.fullAuditTrail}
        </Link>
      </p>
    </section>
  );
}

/** One user: who they are, how they sign in, their sessions and claims, and what support can do. */
export function UserPage(props: { userId: string }): ReactNode {
  const { api, can, notify } = useConsole();
  const project = useProject();
  const user = useResource(() => api.users.get(project, props.userId), [api, project, props.userId]);
  if (user.error) {
    return (
      <>
        <PageTitle>{t.userTitle}</PageTitle>
        <ErrorNotice error={user.error} retry={user.reload} />
      </>
    );
  }
  return (
    <Loaded resource={user}>
      {(u: UserDetail) => (
        <>
          <PageTitle>{u.identifier}</PageTitle>
          <section className="card" aria-labelledby="user-facts">
            <h2 id="user-facts">{t.userFacts}</h2>
            <dl className="facts">
              <dt>{t.identifier}</dt>
              <dd>{u.identifier}</dd>
              <dt>{t.userId}</dt>
              <dd className="mono">{u.user_id}</dd>
              {u.client_user_id && u.client_user_id !== u.user_id && (
                <>
                  <dt>{t.clientUserId}</dt>
                  <dd className="mono">{u.client_user_id}</dd>
                </>
              )}
              <dt>{t.created}</dt>
              <dd>
                <Time at={u.created_at} />
              </dd>
              <dt>{t.lastSignIn}</dt>
              <dd>
                <Time at={u.last_sign_in_at} />
              </dd>
            </dl>
          </section>
          <div className="grid">
            <Sessions user={u} reload={user.reload} />
            <Methods user={u} reload={user.reload} />
          </div>
          <ClaimsEditor userId={u.user_id} />
          <Trail userId={u.user_id} />
          {can('users.delete') && (
            <section className="card danger-zone" aria-labelledby="user-delete">
              <h2 id="user-delete">{t.deleteUser}</h2>
              <p>{t.deleteUserText}</p>
              <ConfirmButton
                title={t.deleteUserTitle}
                text={<p>{fill(t.deleteUserConfirm, { identifier: u.identifier })}</p>}
                typed={u.identifier}
                confirm={t.deleteUser}
                action={async () => {
                  await api.users.delete(project, u.user_id);
                  notify(fill(t.userDeleted, { identifier: u.identifier }));
                  navigate(pathOf({ name: 'users', project }), { replace: true });
                }}
              >
                {t.deleteUser}
              </ConfirmButton>
            </section>
          )}
        </>
      )}
    </Loaded>
  );
}
