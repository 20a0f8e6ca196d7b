import type { ReactNode } from 'react';
import type { Device, Passkey, Session, UserDetail } from '../api/types.js';
import { ConfirmButton } from '../components/confirm.js';
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
      {live.length === 0 ? (
        <p>{t.noSessions}</p>
      ) : (
        <table className="stack">
          <caption className="sr-only">{t.sessions}</caption>
          <thead>
            <tr>
              <th scope="col">{t.method}</th>
              <th scope="col">{t.client}</th>
              {network && <th scope="col">{t.ipNetwork}</th>}
              <th scope="col">{t.started}</th>
              <th scope="col">{t.lastRefreshed}</th>
            </tr>
          </thead>
          <tbody>
            {live.map((s: Session) => (
              <tr key={s.session_id}>
                <td data-label={t.method}>{methodText(s.auth_method)}</td>
                <td data-label={t.client} className="mono">
                  {s.client_id ?? t.projectItself}
                </td>
                {network && (
                  <td data-label={t.ipNetwork} className="mono">
                    {s.ip_network ?? t.unknown}
                  </td>
                )}
                <td data-label={t.started}>
                  <Time at={s.created_at} />
                </td>
                <td data-label={t.lastRefreshed}>
                  <Time at={s.last_refreshed_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
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

/** A user's trusted devices, passkeys and PIN, with removal and unlocking (support and up). */
export function Methods(props: { user: UserDetail; reload(): void }): ReactNode {
  const { api, can, notify } = useConsole();
  const project = useProject();
  const { user } = props;
  const removeDevice = can('devices.remove');
  const removePasskey = can('passkeys.remove');
  return (
    <section className="card" aria-labelledby="user-methods">
      <h2 id="user-methods">{t.signInMethods}</h2>
      <h3>{t.trustedDevices}</h3>
      {user.devices.length === 0 ? (
        <p>{t.noDevices}</p>
      ) : (
        <table className="stack">
          <caption className="sr-only">{t.trustedDevices}</caption>
          <thead>
            <tr>
              <th scope="col">{t.name}</th>
              <th scope="col">{t.added}</th>
              <th scope="col">{t.lastUsed}</th>
              {removeDevice && (
                <th scope="col">
                  <span className="sr-only">{t.actions}</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {user.devices.map((d: Device) => (
              <tr key={d.device_id}>
                <td data-label={t.name}>{d.name || t.unnamed}</td>
                <td data-label={t.added}>
                  <Time at={d.created_at} />
                </td>
                <td data-label={t.lastUsed}>
                  <Time at={d.last_used_at} />
                </td>
                {removeDevice && (
                  <td>
                    <ConfirmButton
                      title={t.removeDeviceTitle}
                      text={<p>{fill(t.removeDeviceText, { name: d.name || t.unnamed })}</p>}
                      confirm={t.remove}
                      aria-label={fill(t.removeNamed, { name: d.name || t.unnamed })}
                      action={async () => {
                        await api.users.removeDevice(project, user.user_id, d.device_id);
                        notify(t.deviceRemoved);
                        props.reload();
                      }}
                    >
                      {t.remove}
                    </ConfirmButton>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3>{t.passkeys}</h3>
      {user.passkeys.length === 0 ? (
        <p>{t.noPasskeys}</p>
      ) : (
        <table className="stack">
          <caption className="sr-only">{t.passkeys}</caption>
          <thead>
            <tr>
              <th scope="col">{t.name}</th>
              <th scope="col">{t.kind}</th>
              <th scope="col">{t.added}</th>
              <th scope="col">{t.lastUsed}</th>
              {removePasskey && (
                <th scope="col">
                  <span className="sr-only">{t.actions}</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {user.passkeys.map((p: Passkey) => (
              <tr key={p.passkey_id}>
                <td data-label={t.name}>{p.name || t.unnamed}</td>
                <td data-label={t.kind}>{p.backed_up ? t.passkeySynced : t.passkeyDeviceBound}</td>
                <td data-label={t.added}>
                  <Time at={p.created_at} />
                </td>
                <td data-label={t.lastUsed}>
                  <Time at={p.last_used_at} />
                </td>
                {removePasskey && (
                  <td>
                    <ConfirmButton
                      title={t.removePasskeyTitle}
                      text={<p>{fill(t.removePasskeyText, { name: p.name || t.unnamed })}</p>}
                      confirm={t.remove}
                      aria-label={fill(t.removeNamed, { name: p.name || t.unnamed })}
                      action={async () => {
                        await api.users.removePasskey(project, user.user_id, p.passkey_id);
                        notify(t.passkeyRemoved);
                        props.reload();
                      }}
                    >
                      {t.remove}
                    </ConfirmButton>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
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
