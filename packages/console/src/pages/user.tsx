import type { ReactNode } from 'react';
import type { AuditEvent, UserDetail } from '../api/types.js';
import { ConfirmButton } from '../components/confirm.js';
import { ErrorNotice, Loaded, PageTitle, Time, useResource } from '../components/ui.js';
import { useConsole, useProject } from '../context.js';
import { fill, t } from '../i18n/index.js';
import { Link, navigate, pathOf, withQuery } from '../router.js';
import { AuditTable } from './audit.js';
import { ClaimsEditor } from './user-claims.js';
import { Methods, Sessions } from './user-methods.js';

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
          <Sessions user={u} reload={user.reload} />
          <Methods user={u} reload={user.reload} />
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
