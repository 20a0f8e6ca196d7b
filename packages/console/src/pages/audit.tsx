import { AUDIT_EVENT_TYPES } from '@tessera/admin';
import { type ReactNode, useEffect, useState } from 'react';
import type { AuditFilters } from '../api/console-api.js';
import type { AuditEvent } from '../api/types.js';
import { StackTable } from '../components/table.js';
import { ActionButton, ErrorNotice, Field, Loaded, PageTitle, Time, useResource } from '../components/ui.js';
import { useConsole, useProject } from '../context.js';
import { t } from '../i18n/index.js';
import { Link, navigate, pathOf, withQuery } from '../router.js';

/** An event's data as `name: value` pairs (objects as JSON). */
function DataList(props: { data: Record<string, unknown> }): ReactNode {
  const entries = Object.entries(props.data);
  if (entries.length === 0) return <span className="muted">—</span>;
  return (
    <span className="mono">
      {entries
        .map(
          ([name, value]) => `${name}: ${typeof value === 'object' ? JSON.stringify(value) : String(value)}`,
        )
        .join(', ')}
    </span>
  );
}

/** Audit events as a table (newest first, as the service answers). */
export function AuditTable(props: { events: AuditEvent[]; showUser?: boolean }): ReactNode {
  const project = useProject();
  const showUser = props.showUser ?? true;
  return (
    <StackTable
      caption={t.auditTitle}
      empty={<p role="status">{t.noEvents}</p>}
      rows={props.events}
      rowKey={(event) => event.event_id}
      columns={[
        { label: t.time, cell: (event) => <Time at={event.created_at} /> },
        { label: t.event, className: 'mono token', cell: (event) => event.type },
        showUser && {
          label: t.user,
          className: 'mono',
          cell: (event) =>
            event.user_id ? (
              <Link to={pathOf({ name: 'user', project, userId: event.user_id })}>{event.user_id}</Link>
            ) : (
              '—'
            ),
        },
        { label: t.details, cell: (event) => <DataList data={event.data} /> },
      ]}
    />
  );
}

/** `datetime-local` value (local time) ⇄ ISO 8601 (UTC) for the service. */
const toIso = (local: string): string | undefined => (local ? new Date(local).toISOString() : undefined);
const toLocal = (iso: string | null): string => {
  if (!iso) return '';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};

/** The project's audit log: filter by event, user and time; page back; export what matches as CSV. */
export function AuditPage(props: { query: URLSearchParams }): ReactNode {
  const { api } = useConsole();
  const project = useProject();
  // A type the service does not list (an old link) filters nothing rather than failing the page.
  const type = AUDIT_EVENT_TYPES.find((known) => known === props.query.get('type')) ?? '';
  const user = props.query.get('user') ?? '';
  const from = props.query.get('from') ?? '';
  const to = props.query.get('to') ?? '';
  const filters: AuditFilters = {
    type: type || undefined,
    user_id: user || undefined,
    from: from || undefined,
    to: to || undefined,
  };
  const filterKey = JSON.stringify(filters);
  const [form, setForm] = useState({ type: '', user: '', from: '', to: '' });
  useEffect(() => {
    setForm({ type, user, from: toLocal(from), to: toLocal(to) });
  }, [type, user, from, to]);
  const [more, setMore] = useState<AuditEvent[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [exportError, setExportError] = useState<unknown>(null);
  const first = useResource(async () => {
    const page = await api.audit.list(project, { ...filters, limit: 50 });
    setMore([]);
    setNext(page.next_before);
    return page.events;
  }, [api, project, filterKey]);
  const apply = () =>
    navigate(
      withQuery(pathOf({ name: 'audit', project }), {
        type: form.type.trim() || undefined,
        user: form.user.trim() || undefined,
        from: toIso(form.from),
        to: toIso(form.to),
      }),
    );
  const loadMore = async () => {
    if (!next) return;
    const page = await api.audit.list(project, { ...filters, before: next, limit: 50 });
    setMore((list) => [...list, ...page.events]);
    setNext(page.next_before);
  };
  const exportCsv = async () => {
    setExportError(null);
    try {
      const csv = await api.audit.csv(project, filters);
      const url = URL.createObjectURL(new Blob([csv], { type: 'text/csv' }));
      const link = document.createElement('a');
      link.href = url;
      link.download = `audit-${project}.csv`;
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (error) {
      setExportError(error);
    }
  };
  const set = (name: keyof typeof form) => (event: { target: { value: string } }) =>
    setForm((f) => ({ ...f, [name]: event.target.value }));
  return (
    <>
      <PageTitle
        actions={
          <ActionButton variant="secondary" action={exportCsv}>
            {t.exportCsv}
          </ActionButton>
        }
      >
        {t.auditTitle}
      </PageTitle>
      {exportError ? <ErrorNotice error={exportError} /> : null}
      <form
        className="card"
        aria-label={t.filters}
        onSubmit={(event) => {
          event.preventDefault();
          apply();
        }}
      >
        <div className="grid">
          <Field label={t.eventType}>
            {({ id }) => (
              <select id={id} value={form.type} onChange={set('type')}>
                <option value="">{t.allEvents}</option>
                {/* The service's own list (its OpenAPI document, through @tessera/admin). */}
                {AUDIT_EVENT_TYPES.map((type) => (
                  <option key={type} value={type}>
                    {type}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field label={t.userId}>
            {({ id }) => <input id={id} value={form.user} spellCheck={false} onChange={set('user')} />}
          </Field>
          <Field label={t.from}>
            {({ id }) => <input id={id} type="datetime-local" value={form.from} onChange={set('from')} />}
          </Field>
          <Field label={t.to}>
            {({ id }) => <input id={id} type="datetime-local" value={form.to} onChange={set('to')} />}
          </Field>
        </div>
        <div className="actions">
          <button type="submit">{t.applyFilters}</button>
          <button
            type="button"
            className="secondary"
            onClick={() => navigate(pathOf({ name: 'audit', project }))}
          >
            {t.clearFilters}
          </button>
        </div>
      </form>
      <section className="card" aria-label={t.events}>
        <Loaded resource={first}>
          {(events: AuditEvent[]) => (
            <>
              <AuditTable events={[...events, ...more]} />
              {next && (
                <div className="actions">
                  <ActionButton variant="secondary" action={() => loadMore().catch(setExportError)}>
                    {t.loadMore}
                  </ActionButton>
                </div>
              )}
            </>
          )}
        </Loaded>
      </section>
    </>
  );
}
