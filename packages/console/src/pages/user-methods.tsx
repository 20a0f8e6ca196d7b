import type { ReactNode } from 'react';
import type { Device, UserDetail } from '../api/types.js';
import { ConfirmButton, RemoveButton } from '../components/confirm.js';
import { type Column, StackTable } from '../components/table.js';
import { ActionButton, Badge, errorText, Time } from '../components/ui.js';
import { useConsole, useProject } from '../context.js';
import { fill, t } from '../i18n/index.js';

/** By the service's method names (sessions, audit events), and the tokens' `TRUSTED_DEVICE`. */
const METHOD: Record<string, keyof typeof t> = {
  OTP: 'methodOtp',
  BIOMETRIC: 'methodPasskey',
  'TRUSTED DEVICE': 'methodDevice',
  TRUSTED_DEVICE: 'methodDevice',
  PIN: 'methodPin',
};
/** A sign-in method in words. */
export const methodText = (method: string): string =>
  METHOD[method] ? (t[METHOD[method]] as string) : method;

/** A user's active sessions, and signing them out everywhere (support and up). */
export function Sessions(props: { user: UserDetail; reload(): void }): ReactNode {
  const { api, can, notify } = useConsole();
  const project = useProject();
  const live = props.user.sessions.filter((s) => !s.revoked_at);
  // The IP network, where the service reports it.
  const network = live.some((s) => 'ip_network' in s);
  return (
    <section className="card" aria-labelledby="user-sessions">
      <h2 id="user-sessions">{t.sessions}</h2>
      <StackTable
        caption={t.sessions}
        empty={<p>{t.noSessions}</p>}
        rows={live}
        rowKey={(s) => s.session_id}
        columns={[
          { label: t.method, cell: (s) => methodText(s.auth_method) },
          { label: t.client, className: 'mono', cell: (s) => s.client_id ?? t.projectItself },
          network && { label: t.ipNetwork, className: 'mono', cell: (s) => s.ip_network ?? t.unknown },
          { label: t.started, cell: (s) => <Time at={s.created_at} /> },
          { label: t.lastRefreshed, cell: (s) => <Time at={s.last_refreshed_at} /> },
        ]}
      />
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

/** What a trusted device and a passkey share: a name (maybe empty) and when added and last used. */
type Method = Pick<Device, 'name' | 'created_at' | 'last_used_at'>;

/**
 * A user's trusted devices or passkeys, with `more` columns after the name (a passkey's kind), each
 * removable after confirming when `remove` is given (the member may remove them).
 */
function MethodsTable<T extends Method>(props: {
  caption: string;
  empty: string;
  rows: T[];
  rowKey: (row: T) => string;
  more?: Column<T>[];
  remove: false | { title: string; text: string; done: string; action(row: T): Promise<unknown> };
  reload(): void;
}): ReactNode {
  const { notify } = useConsole();
  const { remove } = props;
  const name = (row: T) => row.name || t.unnamed;
  return (
    <StackTable
      caption={props.caption}
      empty={<p>{props.empty}</p>}
      rows={props.rows}
      rowKey={props.rowKey}
      columns={[
        { label: t.name, cell: name },
        ...(props.more ?? []),
        { label: t.added, cell: (row) => <Time at={row.created_at} /> },
        { label: t.lastUsed, cell: (row) => <Time at={row.last_used_at} /> },
      ]}
      actions={
        remove &&
        ((row) => (
          <RemoveButton
            name={name(row)}
            title={remove.title}
            text={fill(remove.text, { name: name(row) })}
            action={async () => {
              await remove.action(row);
              notify(remove.done);
              props.reload();
            }}
          />
        ))
      }
    />
  );
}

/** A user's trusted devices, passkeys and PIN, with removal and unlocking (support and up). */
export function Methods(props: { user: UserDetail; reload(): void }): ReactNode {
  const { api, can, notify } = useConsole();
  const project = useProject();
  const { user } = props;
  return (
    <section className="card" aria-labelledby="user-methods">
      <h2 id="user-methods">{t.signInMethods}</h2>
      <h3>{t.trustedDevices}</h3>
      <MethodsTable
        caption={t.trustedDevices}
        empty={t.noDevices}
        rows={user.devices}
        rowKey={(d) => d.device_id}
        remove={
          can('devices.remove') && {
            title: t.removeDeviceTitle,
            text: t.removeDeviceText,
            done: t.deviceRemoved,
            action: (d) => api.users.removeDevice(project, user.user_id, d.device_id),
          }
        }
        reload={props.reload}
      />
      <h3>{t.passkeys}</h3>
      <MethodsTable
        caption={t.passkeys}
        empty={t.noPasskeys}
        rows={user.passkeys}
        rowKey={(p) => p.passkey_id}
        more={[{ label: t.kind, cell: (p) => (p.backed_up ? t.passkeySynced : t.passkeyDeviceBound) }]}
        remove={
          can('passkeys.remove') && {
            title: t.removePasskeyTitle,
            text: t.removePasskeyText,
            done: t.passkeyRemoved,
            action: (p) => api.users.removePasskey(project, user.user_id, p.passkey_id),
          }
        }
        reload={props.reload}
      />
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
