import { type ReactNode, useState } from 'react';
import type { OAuthClient } from '../api/types.js';
import { ConfirmButton } from '../components/confirm.js';
import { SecretOnce } from '../components/secret.js';
import { ActionButton, errorText, Field, Loaded, PageTitle, useResource } from '../components/ui.js';
import { useConsole, useProject } from '../context.js';
import { fill, t } from '../i18n/index.js';

/** One URI a line, blank lines dropped. */
const lines = (text: string): string[] =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);

/** The metadata a client keeps when one field changes (RFC 7592's PUT replaces all of it). */
function metadataOf(client: OAuthClient & { client_secret_expires_at?: number }): Record<string, unknown> {
  const { client_secret, client_id_issued_at, client_secret_expires_at, ...metadata } = client;
  return metadata;
}

function ClientRow(props: { client: OAuthClient; reload(): void }): ReactNode {
  const { api, can, notify } = useConsole();
  const project = useProject();
  const { client } = props;
  const [editing, setEditing] = useState(false);
  const [uris, setUris] = useState(client.redirect_uris.join('\n'));
  const [error, setError] = useState('');
  const confidential = client.token_endpoint_auth_method !== 'none';
  const name = client.client_name || client.client_id;
  const save = async () => {
    setError('');
    try {
      await api.clients.update(project, client.client_id, {
        ...metadataOf(client),
        redirect_uris: lines(uris),
      });
      notify(t.clientSaved);
      setEditing(false);
      props.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <li className="card">
      <h3>{name}</h3>
      <dl className="facts">
        <dt>{t.clientId}</dt>
        <dd className="mono">{client.client_id}</dd>
        <dt>{t.clientType}</dt>
        <dd>{confidential ? t.clientConfidential : t.clientPublic}</dd>
        {client.first_party && (
          <>
            <dt>{t.consent}</dt>
            <dd>{t.firstPartyNoConsent}</dd>
          </>
        )}
        <dt>{t.redirectUris}</dt>
        <dd>
          {editing ? null : (
            <ul>
              {client.redirect_uris.map((uri) => (
                <li key={uri} className="mono">
                  {uri}
                </li>
              ))}
            </ul>
          )}
        </dd>
      </dl>
      {editing && (
        <form
          onSubmit={(event) => {
            event.preventDefault();
            void save();
          }}
        >
          <Field
            label={fill(t.redirectUrisOf, { name })}
            hint={t.redirectUrisHint}
            error={error || undefined}
          >
            {({ id, describedBy, invalid }) => (
              <textarea
                id={id}
                value={uris}
                rows={4}
                spellCheck={false}
                aria-describedby={describedBy}
                aria-invalid={invalid || undefined}
                onChange={(event) => setUris(event.target.value)}
              />
            )}
          </Field>
          <div className="actions">
            <ActionButton action={save}>{t.save}</ActionButton>
            <button type="button" className="secondary" onClick={() => setEditing(false)}>
              {t.cancel}
            </button>
          </div>
        </form>
      )}
      {can('clients.write') && !editing && (
        <div className="actions">
          <button
            type="button"
            className="secondary"
            aria-label={fill(t.editUrisOf, { name })}
            onClick={() => {
              setUris(client.redirect_uris.join('\n'));
              setEditing(true);
            }}
          >
            {t.editRedirectUris}
          </button>
          <ConfirmButton
            title={t.deleteClientTitle}
            text={<p>{fill(t.deleteClientText, { name })}</p>}
            confirm={t.delete}
            aria-label={fill(t.deleteNamed, { name })}
            action={async () => {
              await api.clients.delete(project, client.client_id);
              notify(fill(t.clientDeleted, { name }));
              props.reload();
            }}
          >
            {t.delete}
          </ConfirmButton>
        </div>
      )}
    </li>
  );
}

function NewClient(props: { created(client: OAuthClient): void }): ReactNode {
  const { api } = useConsole();
  const project = useProject();
  const [name, setName] = useState('');
  const [uris, setUris] = useState('');
  const [kind, setKind] = useState<'confidential' | 'public'>('confidential');
  const [firstParty, setFirstParty] = useState(false);
  const [error, setError] = useState('');
  const create = async () => {
    setError('');
    if (!name.trim()) return setError(t.clientNameRequired);
    if (lines(uris).length === 0) return setError(t.redirectUrisRequired);
    try {
      const client = await api.clients.create(project, {
        client_name: name.trim(),
        redirect_uris: lines(uris),
        token_endpoint_auth_method: kind === 'public' ? 'none' : 'client_secret_basic',
        first_party: firstParty,
      });
      setName('');
      setUris('');
      props.created(client);
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <section className="card" aria-labelledby="new-client">
      <h2 id="new-client">{t.newClient}</h2>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void create();
        }}
      >
        <Field label={t.clientName}>
          {({ id }) => (
            <input id={id} value={name} maxLength={100} onChange={(event) => setName(event.target.value)} />
          )}
        </Field>
        <Field label={t.redirectUris} hint={t.redirectUrisHint}>
          {({ id, describedBy }) => (
            <textarea
              id={id}
              value={uris}
              rows={3}
              spellCheck={false}
              aria-describedby={describedBy}
              onChange={(event) => setUris(event.target.value)}
            />
          )}
        </Field>
        <fieldset>
          <legend>{t.clientType}</legend>
          <label className="check">
            <input
              type="radio"
              name="client-kind"
              checked={kind === 'confidential'}
              onChange={() => setKind('confidential')}
            />
            {t.clientConfidentialHint}
          </label>
          <label className="check">
            <input
              type="radio"
              name="client-kind"
              checked={kind === 'public'}
              onChange={() => setKind('public')}
            />
            {t.clientPublicHint}
          </label>
        </fieldset>
        <label className="check field">
          <input
            type="checkbox"
            checked={firstParty}
            onChange={(event) => setFirstParty(event.target.checked)}
          />
          {t.firstParty}
        </label>
        {error && (
          <p className="notice error" role="alert">
            {error}
          </p>
        )}
        <ActionButton action={create}>{t.createClient}</ActionButton>
      </form>
    </section>
  );
}

/** The project's OAuth clients: redirect URIs, a new client's secret (shown once), deletion. */
export function ClientsPage(): ReactNode {
  const { api, can, notify } = useConsole();
  const project = useProject();
  const clients = useResource(() => api.clients.list(project), [api, project]);
  const [secret, setSecret] = useState<{ name: string; value: string } | null>(null);
  return (
    <>
      <PageTitle>{t.clientsTitle}</PageTitle>
      {secret && (
        <SecretOnce
          label={fill(t.clientSecretOf, { name: secret.name })}
          value={secret.value}
          onDone={() => setSecret(null)}
        />
      )}
      <section aria-labelledby="client-list">
        <h2 id="client-list">{t.clientList}</h2>
        <Loaded resource={clients}>
          {(list) =>
            list.length === 0 ? (
              <p>{t.noClients}</p>
            ) : (
              <ul className="plain">
                {list.map((client) => (
                  <ClientRow key={client.client_id} client={client} reload={clients.reload} />
                ))}
              </ul>
            )
          }
        </Loaded>
      </section>
      {can('clients.write') && (
        <NewClient
          created={(client) => {
            notify(fill(t.clientCreated, { name: client.client_name ?? client.client_id }));
            if (client.client_secret)
              setSecret({ name: client.client_name ?? client.client_id, value: client.client_secret });
            clients.reload();
          }}
        />
      )}
    </>
  );
}
