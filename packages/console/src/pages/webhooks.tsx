import { AUDIT_EVENT_TYPES, type CreatedWebhook } from '@tessera/admin';
import { type ReactNode, useState } from 'react';
import type { Webhook } from '../api/types.js';
import { SecretOnce } from '../components/secret.js';
import { StackTable } from '../components/table.js';
import {
  ActionButton,
  Badge,
  errorText,
  Field,
  Loaded,
  PageTitle,
  Time,
  useResource,
} from '../components/ui.js';
import { useConsole, useProject } from '../context.js';
import { fill, t } from '../i18n/index.js';
import { Link, pathOf } from '../router.js';

/** An endpoint's events in words (none listed, or `*`: every event). */
export const eventsOf = (webhook: Webhook): string =>
  webhook.event_types.length === 0 || webhook.event_types.includes('*')
    ? t.allEvents
    : webhook.event_types.join(', ');

export const tone = (status: string | null): 'ok' | 'bad' | 'warn' =>
  status === 'delivered' || status === 'ok'
    ? 'ok'
    : status === 'failed' || status === 'error'
      ? 'bad'
      : 'warn';

function NewWebhook(props: { created(webhook: CreatedWebhook): void }): ReactNode {
  const { api } = useConsole();
  const project = useProject();
  const [url, setUrl] = useState('');
  const [types, setTypes] = useState<string[]>([]);
  const [error, setError] = useState('');
  const create = async () => {
    setError('');
    if (!url.trim()) return setError(t.webhookUrlRequired);
    try {
      const webhook = await api.webhooks.create(project, { url: url.trim(), event_types: types });
      setUrl('');
      setTypes([]);
      props.created(webhook);
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <section className="card" aria-labelledby="new-webhook">
      <h2 id="new-webhook">{t.newWebhook}</h2>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void create();
        }}
      >
        <Field label={t.webhookUrl} hint={t.webhookUrlHint}>
          {({ id, describedBy }) => (
            <input
              id={id}
              type="url"
              value={url}
              spellCheck={false}
              aria-describedby={describedBy}
              onChange={(event) => setUrl(event.target.value)}
            />
          )}
        </Field>
        <details>
          <summary>{types.length ? fill(t.eventTypesChosen, { n: types.length }) : t.eventTypesAll}</summary>
          <fieldset>
            <legend>{t.eventTypes}</legend>
            <p className="muted">{t.eventTypesHint}</p>
            {AUDIT_EVENT_TYPES.map((type) => (
              <label className="check mono" key={type}>
                <input
                  type="checkbox"
                  checked={types.includes(type)}
                  onChange={(event) =>
                    setTypes((list) =>
                      event.target.checked ? [...list, type] : list.filter((x) => x !== type),
                    )
                  }
                />
                {type}
              </label>
            ))}
          </fieldset>
        </details>
        {error && (
          <p className="notice error" role="alert">
            {error}
          </p>
        )}
        <div className="actions">
          <ActionButton action={create}>{t.addWebhook}</ActionButton>
        </div>
      </form>
    </section>
  );
}

/** The project's webhook endpoints, their last status, and adding one (its secret shown once). */
export function WebhooksPage(): ReactNode {
  const { api, can, notify } = useConsole();
  const project = useProject();
  const webhooks = useResource(() => api.webhooks.list(project), [api, project]);
  const [secret, setSecret] = useState<{ url: string; value: string } | null>(null);
  return (
    <>
      <PageTitle>{t.webhooksTitle}</PageTitle>
      {secret && (
        <SecretOnce
          label={fill(t.webhookSecretOf, { url: secret.url })}
          value={secret.value}
          onDone={() => setSecret(null)}
        />
      )}
      <section className="card" aria-labelledby="webhook-list">
        <h2 id="webhook-list">{t.endpoints}</h2>
        <Loaded resource={webhooks}>
          {(list) => (
            <StackTable
              caption={t.endpoints}
              empty={<p>{t.noWebhooks}</p>}
              rows={list}
              rowKey={(w) => w.webhook_id}
              columns={[
                {
                  label: t.webhookUrl,
                  className: 'mono',
                  cell: (w) => (
                    <Link to={pathOf({ name: 'webhook', project, webhookId: w.webhook_id })}>{w.url}</Link>
                  ),
                },
                { label: t.eventTypes, cell: eventsOf },
                {
                  label: t.lastStatus,
                  cell: (w) =>
                    w.last_status ? <Badge tone={tone(w.last_status)}>{w.last_status}</Badge> : t.never,
                },
                { label: t.lastAttempt, cell: (w) => <Time at={w.last_attempt_at} /> },
              ]}
            />
          )}
        </Loaded>
      </section>
      {can('webhooks.write') && (
        <NewWebhook
          created={(webhook) => {
            notify(t.webhookAdded);
            if (webhook.secret) setSecret({ url: webhook.url, value: webhook.secret });
            webhooks.reload();
          }}
        />
      )}
    </>
  );
}
