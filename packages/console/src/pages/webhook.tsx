import type { ReactNode } from 'react';
import type { Webhook, WebhookDelivery } from '../api/types.js';
import { ConfirmButton } from '../components/confirm.js';
import { StackTable } from '../components/table.js';
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
        {(list: WebhookDelivery[]) => (
          <StackTable
            caption={t.deliveries}
            empty={<p>{t.noDeliveries}</p>}
            rows={list}
            rowKey={(d) => d.delivery_id}
            columns={[
              { label: t.event, className: 'mono token', cell: (d) => d.event_type },
              { label: t.status, cell: (d) => <Badge tone={tone(d.status)}>{d.status}</Badge> },
              { label: t.attempts, cell: (d) => d.attempts },
              {
                label: t.lastResponse,
                cell: (d) => (
                  <>
                    {d.last_status_code ?? ''} {d.last_error ?? (d.last_status_code ? '' : '—')}
                  </>
                ),
              },
              { label: t.created, cell: (d) => <Time at={d.created_at} /> },
              {
                label: t.nextAttempt,
                cell: (d) => (d.next_attempt_at ? <Time at={d.next_attempt_at} /> : '—'),
              },
            ]}
            actions={
              can('webhooks.write') &&
              ((d) => (
                <ActionButton
                  variant="secondary"
                  aria-label={fill(t.redeliverNamed, {
                    event: d.event_type,
                    when: d.created_at ?? '',
                  })}
                  action={() =>
                    act(() => api.webhooks.redeliver(project, props.webhookId, d.delivery_id), t.redelivered)
                  }
                >
                  {t.redeliver}
                </ActionButton>
              ))
            }
          />
        )}
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
