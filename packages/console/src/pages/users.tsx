import { type ReactNode, useEffect, useState } from 'react';
import type { User } from '../api/types.js';
import { StackTable } from '../components/table.js';
import { Field, Loaded, PageTitle, Time, useResource } from '../components/ui.js';
import { useConsole, useProject } from '../context.js';
import { fill, t } from '../i18n/index.js';
import { Link, navigate, pathOf, withQuery } from '../router.js';

/** Users by identifier prefix (e-mail, phone number) or user id; each opens the user's page. */
export function UsersPage(props: { query: string }): ReactNode {
  const { api } = useConsole();
  const project = useProject();
  const [typed, setTyped] = useState(props.query);
  useEffect(() => setTyped(props.query), [props.query]);
  const results = useResource(
    async () => (props.query ? (await api.users.search(project, props.query)).users : undefined),
    [api, project, props.query],
  );
  const search = () =>
    navigate(withQuery(pathOf({ name: 'users', project }), { q: typed.trim() || undefined }));
  return (
    <>
      <PageTitle>{t.usersTitle}</PageTitle>
      <search className="card">
        <form
          className="inline-form"
          onSubmit={(event) => {
            event.preventDefault();
            search();
          }}
        >
          <Field label={t.searchUsers} hint={t.searchUsersHint}>
            {({ id, describedBy }) => (
              <input
                id={id}
                type="search"
                value={typed}
                autoComplete="off"
                spellCheck={false}
                aria-describedby={describedBy}
                onChange={(event) => setTyped(event.target.value)}
              />
            )}
          </Field>
          <button type="submit">{t.search}</button>
        </form>
      </search>
      {props.query && (
        <section aria-labelledby="user-results" className="card">
          <h2 id="user-results">{fill(t.resultsFor, { query: props.query })}</h2>
          <Loaded resource={results}>
            {(users: User[] | undefined) => (
              <StackTable
                caption={t.usersTitle}
                empty={<p role="status">{t.noUsersFound}</p>}
                rows={users ?? []}
                rowKey={(user) => user.user_id}
                columns={[
                  {
                    label: t.identifier,
                    cell: (user) => (
                      <Link to={pathOf({ name: 'user', project, userId: user.user_id })}>
                        {user.identifier}
                      </Link>
                    ),
                  },
                  { label: t.userId, className: 'mono', cell: (user) => user.user_id },
                  { label: t.created, cell: (user) => <Time at={user.created_at} /> },
                  { label: t.lastSignIn, cell: (user) => <Time at={user.last_sign_in_at} /> },
                ]}
              />
            )}
          </Loaded>
        </section>
      )}
    </>
  );
}
