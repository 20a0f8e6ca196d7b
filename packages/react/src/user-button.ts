import type { Passkey, PinStatus, TesseraClient, TrustedDevice } from '@tessera/client';
import { createElement as h, type ReactNode, useCallback, useEffect, useId, useState } from 'react';
import { useSession } from './hooks.js';
import { useTesseraContext } from './provider.js';

/**
 * Props of {@link UserButton}.
 *
 * @example
 * ```tsx
 * const props: UserButtonProps = { onSignedOut: () => navigate('/sign-in') };
 * ```
 */
export interface UserButtonProps {
  /** Called once the user has signed out here. */
  onSignedOut?(): void;
  className?: string;
}

interface Account {
  devices: TrustedDevice[];
  current: string | null;
  passkeys: Passkey[];
  pin: PinStatus | null;
}

/**
 * The signed-in user, as a button that opens their account: trusted devices (this one marked;
 * remove), passkeys (add, remove), the PIN (set or change) and sign out. Nothing when signed out.
 * Inside a `<TesseraProvider>` whose client is a full `@tessera/client`.
 *
 * @example
 * ```tsx
 * import { UserButton } from '@tessera/react';
 *
 * <header><UserButton onSignedOut={() => navigate('/')} /></header>
 * ```
 */
export function UserButton({ onSignedOut, className }: UserButtonProps): ReactNode {
  const { user, signOut } = useSession();
  const client = useTesseraContext('UserButton').client as TesseraClient;
  const [open, setOpen] = useState(false);
  const [account, setAccount] = useState<Account | null>(null);
  const [status, setStatus] = useState('');
  const id = useId();

  const load = useCallback(async () => {
    const [devices, current, passkeys, pin] = await Promise.all([
      client.devices.list().catch(() => []),
      client.devices.currentId().catch(() => null),
      client.passkeys.list().catch(() => []),
      client.pin.status().catch(() => null),
    ]);
    setAccount({ devices, current, passkeys, pin });
  }, [client]);
  useEffect(() => {
    if (open && user) void load();
  }, [open, user, load]);

  /** Runs an account change, then reloads the lists and says what happened. */
  const change = (work: () => Promise<unknown>, done: string) => () =>
    void work().then(
      () => {
        setStatus(done);
        return load();
      },
      (error: { detail?: string }) => setStatus(`Not done: ${error.detail ?? 'try again'}`),
    );

  if (!user) return null;
  const panel = `${id}-panel`;
  const pinForm = (event: { preventDefault(): void; currentTarget: HTMLFormElement }) => {
    event.preventDefault();
    const pin = String(new FormData(event.currentTarget).get('pin') ?? '');
    event.currentTarget.reset();
    change(() => client.pin.set(pin), 'PIN saved.')();
  };
  return h(
    'div',
    { className, 'data-tessera-user-button': '' },
    h(
      'button',
      { type: 'button', 'aria-expanded': open, 'aria-controls': panel, onClick: () => setOpen(!open) },
      user.identifier,
    ),
    open &&
      h(
        'section',
        { id: panel, 'aria-label': 'Your account' },
        h('p', null, `Signed in as ${user.identifier} (${user.authMethod.replace('_', ' ').toLowerCase()})`),
        h('h2', null, 'Trusted devices'),
        account &&
          (account.devices.length === 0
            ? h('p', null, 'None.')
            : h(
                'ul',
                null,
                ...account.devices.map((d) =>
                  h(
                    'li',
                    { key: d.deviceId },
                    `${d.name}${d.deviceId === account.current ? ' (this device)' : ''} `,
                    h(
                      'button',
                      {
                        type: 'button',
                        onClick: change(() => client.devices.remove(d.deviceId), 'Device removed.'),
                      },
                      `Remove ${d.name}`,
                    ),
                  ),
                ),
              )),
        account?.current === null &&
          h(
            'button',
            { type: 'button', onClick: change(() => client.devices.register(), 'This device is trusted.') },
            'Trust this device',
          ),
        h('h2', null, 'Passkeys'),
        account &&
          (account.passkeys.length === 0
            ? h('p', null, 'None.')
            : h(
                'ul',
                null,
                ...account.passkeys.map((p) =>
                  h(
                    'li',
                    { key: p.passkeyId },
                    `${p.name} `,
                    h(
                      'button',
                      {
                        type: 'button',
                        onClick: change(() => client.passkeys.remove(p.passkeyId), 'Passkey removed.'),
                      },
                      `Remove ${p.name}`,
                    ),
                  ),
                ),
              )),
        h(
          'button',
          { type: 'button', onClick: change(() => client.passkeys.register(), 'Passkey added.') },
          'Add a passkey',
        ),
        h('h2', null, 'PIN'),
        account?.pin && h('p', null, account.pin.pinSet ? 'A PIN is set.' : 'No PIN yet.'),
        h(
          'form',
          { onSubmit: pinForm },
          h('label', { htmlFor: `${id}-pin` }, account?.pin?.pinSet ? 'New PIN' : 'Set a PIN'),
          h('input', {
            id: `${id}-pin`,
            name: 'pin',
            type: 'password',
            inputMode: 'numeric',
            autoComplete: 'off',
          }),
          h('button', { type: 'submit' }, 'Save PIN'),
        ),
        h('p', { role: 'status' }, status),
        h(
          'button',
          {
            type: 'button',
            onClick: () =>
              void signOut().then(() => {
                setOpen(false);
                onSignedOut?.();
              }),
          },
          'Sign out',
        ),
      ),
  );
}
