import type { ReactNode } from 'react';
import type { Webhook, WebhookDelivery } from '../api/types.js';
import { ConfirmButton } from '../components/confirm.js';
import { ActionButton, Badge, errorText, Loaded, PageTitle, Time, useResource } from '../components/ui.js';
import { useConsole, useProject } from '../context.js';
import { fill, t } from '../i18n/index.js';
import { navigate, pathOf } from '../router.js';
import { eventsOf, tone } from './webhooks.js';

function Deliveries(props: { webhookId: string }): ReactNode {
  const { api, can, notify } = useConsole();
  const project = useProject();
  const deliveries = useResource(
    () => api.webhooks.deliveries(project, props.webhookId),
    [api, project, props.webhookId],
  );
  const act = async (work: () => Promise<unknown>, done: string) => {
    try {
      await work();
      notify(done);
      deliveries.reload();
    } catch (error) {
      notify(errorText(error));
    }
  };
  return (
    <section className="card" aria-labelledby="deliveries">
      <div className="page-head">
        <h2 id="deliveries">{t.deliveries}</h2>
        <div className="actions">
          <button type="button" className="secondary" onClick={deliveries.reload}>
            {t.refresh}
          </button>
          {can('webhooks.write') && (
            <ActionButton
              variant="secondary"
              action={() => act(() => api.webhooks.test(project, props.webhookId), t.testEventSent)}
            >
              {t.sendTestEvent}
            </ActionButton>
          )}
        </div>
      </div>
      <Loaded resource={deliveries}>
        {(list: WebhookDelivery[]) =>
          list.length === 0 ? (
            <p>{t.noDeliveries}</p>
          ) : (
            <table className="stack">
              <caption className="sr-only">{t.deliveries}</caption>
              <thead>
                <tr>
                  <th scope="col">{t.event}</th>
                  <th scope="col">{t.status}</th>
                  <th scope="col">{t.attempts}</th>
                  <th scope="col">{t.lastResponse}</th>
                  <th scope="col">{t.created}</th>
                  <th scope="col">{t.nextAttempt}</th>
                  {can('webhooks.write') && (
                    <th scope="col">
                      <span className="sr-only">{t.actions}</span>
                    </th>
                  )}
                </tr>
              </thead>
              <tbody>
                {list.map((d) => (
                  <tr key={d.delivery_id}>
                    <td data-label={t.event} className="mono">
                      {d.event_type}
                    </td>
                    <td data-label={t.status}>
                      <Badge tone={tone(d.status)}>{d.status}</Badge>
                    </td>
                    <td data-label={t.attempts}>{d.attempts}</td>
                    <td data-label={t.lastResponse}>
                      {d.last_status_code ?? ''} {d.last_error ?? (d.last_status_code ? '' : '—')}
                    </td>
                    <td data-label={t.created}>
                      <Time at={d.created_at} />
                    </td>
                    <td data-label={t.nextAttempt}>
                      {d.next_attempt_at ? <Time at={d.next_attempt_at} /> : '—'}
                    </td>
                    {can('webhooks.write') && (
                      <td>
                        <ActionButton
                          variant="secondary"
                          aria-label={fill(t.redeliverNamed, {
                            event: d.event_type,
                            when: d.created_at ?? '',
                          })}
                          action={() =>
                            act(
                              () => api.webhooks.redeliver(project, props.webhookId, d.delivery_id),
                              t.redelivered,
                            )
                          }
                        >
                          {t.redeliver}
                        </ActionButton>
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
    </section>
  );
}

/** One webhook endpoint: its deliveries with status and retries, redelivery, a test event. */
export function WebhookPage(props: { webhookId: string }): ReactNode {
  const { api, can, notify } = useConsole();
  const project = useProject();
  const webhook = useResource(
    () => api.webhooks.get(project, props.webhookId),
    [api, project, props.webhookId],
  );
  return (
    <Loaded resource={webhook}>
      {(w: Webhook) => (
        <>
          <PageTitle>{fill(t.webhookTitle, { url: w.url })}</PageTitle>
          <section className="card" aria-labelledby="webhook-facts">
            <h2 id="webhook-facts">{t.endpoint}</h2>
            <dl className="facts">
              <dt>{t.webhookUrl}</dt>
              <dd className="mono">{w.url}</dd>
              <dt>{t.eventTypes}</dt>
              <dd>{eventsOf(w)}</dd>
              <dt>{t.created}</dt>
              <dd>
                <Time at={w.created_at} />
              </dd>
            </dl>
            {can('webhooks.write') && (
              <div className="actions">
                <ConfirmButton
                  title={t.deleteWebhookTitle}
                  text={<p>{fill(t.deleteWebhookText, { url: w.url })}</p>}
                  confirm={t.delete}
                  action={async () => {
                    await api.webhooks.delete(project, w.webhook_id);
                    notify(t.webhookDeleted);
                    navigate(pathOf({ name: 'webhooks', project }), { replace: true });
                  }}
                >
                  {t.deleteWebhook}
                </ConfirmButton>
              </div>
            )}
          </section>
          <Deliveries webhookId={w.webhook_id} />
        </>
      )}
    </Loaded>
  );
}
