import { type ReactNode, useEffect, useState } from 'react';
import type { User } from '../api/types.js';
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
            {(users: User[] | undefined) =>
              !users || users.length === 0 ? (
                <p role="status">{t.noUsersFound}</p>
              ) : (
                <table className="stack">
                  <caption className="sr-only">{t.usersTitle}</caption>
                  <thead>
                    <tr>
                      <th scope="col">{t.identifier}</th>
                      <th scope="col">{t.userId}</th>
                      <th scope="col">{t.created}</th>
                      <th scope="col">{t.lastSignIn}</th>
                    </tr>
                  </thead>
                  <tbody>
                    {users.map((user) => (
                      <tr key={user.user_id}>
                        <td data-label={t.identifier}>
                          <Link to={pathOf({ name: 'user', project, userId: user.user_id })}>
                            {user.identifier}
                          </Link>
                        </td>
                        <td data-label={t.userId} className="mono">
                          {user.user_id}
                        </td>
                        <td data-label={t.created}>
                          <Time at={user.created_at} />
                        </td>
                        <td data-label={t.lastSignIn}>
                          <Time at={user.last_sign_in_at} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )
            }
          </Loaded>
        </section>
      )}
    </>
  );
}
