import type { ReactNode } from 'react';
import type { SigningKey } from '../api/types.js';
import { ConfirmButton } from '../components/confirm.js';
import { StackTable } from '../components/table.js';
import { Badge, Loaded, PageTitle, Time, useResource } from '../components/ui.js';
import { useConsole } from '../context.js';
import { fill, t, when } from '../i18n/index.js';

const TONE: Record<string, 'ok' | 'warn' | 'bad'> = {
  active: 'ok',
  next: 'warn',
  published: 'warn',
  retired: 'bad',
};

/** The service's signing keys with their state and dates; rotation with the pre-publication delay. */
export function KeysPage(): ReactNode {
  const { api, notify } = useConsole();
  const keys = useResource(() => api.keys.list(), [api]);
  return (
    <>
      <PageTitle>{t.keysTitle}</PageTitle>
      <p className="muted">{t.keysText}</p>
      <section className="card" aria-labelledby="key-list">
        <h2 id="key-list">{t.signingKeys}</h2>
        <Loaded resource={keys}>
          {(data: { keys: SigningKey[] }) => (
            <StackTable
              caption={t.signingKeys}
              rows={data.keys}
              rowKey={(key) => key.kid}
              columns={[
                { label: t.keyId, className: 'mono', cell: (key) => key.kid },
                {
                  label: t.state,
                  cell: (key) => <Badge tone={TONE[key.state] ?? 'warn'}>{key.state}</Badge>,
                },
                { label: t.created, cell: (key) => <Time at={key.created_at} /> },
                { label: t.activeFrom, cell: (key) => <Time at={key.activated_at ?? key.activate_at} /> },
                { label: t.retires, cell: (key) => (key.retire_at ? <Time at={key.retire_at} /> : '—') },
              ]}
            />
          )}
        </Loaded>
        <div className="actions">
          <ConfirmButton
            variant="primary"
            title={t.rotateKeysTitle}
            text={<p>{t.rotateKeysText}</p>}
            confirm={t.rotateKeys}
            action={async () => {
              const rotated = await api.keys.rotate();
              notify(fill(t.keysRotated, { when: when(rotated.activate_at) }));
              keys.reload();
            }}
          >
            {t.rotateKeys}
          </ConfirmButton>
        </div>
      </section>
    </>
  );
}
