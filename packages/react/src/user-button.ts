import type { Passkey, PinStatus, TesseraClient, TrustedDevice } from '@tessera/client';
import type { Failure, Messages } from '@tessera/ui';
import {
  type CSSProperties,
  type FormEvent,
  createElement as h,
  type KeyboardEvent,
  type ReactNode,
  useCallback,
  useEffect,
  useId,
  useLayoutEffect,
  useRef,
  useState,
} from 'react';
import { useSession } from './hooks.js';
import { useTesseraContext } from './provider.js';
import type { TesseraUser } from './store.js';

/**
 * Props of {@link UserButton}.
 *
 * @example
 * ```tsx
 * const props: UserButtonProps = { locale: 'de', onSignedOut: () => navigate('/sign-in') };
 * ```
 */
export interface UserButtonProps {
  /** Called once the user has signed out here. */
  onSignedOut?(): void;
  /** `en`, `fr` or `de`; default the browser's language (as `<SignIn/>`). */
  locale?: string;
  /** `light` or `dark`; default the system's. */
  theme?: 'light' | 'dark';
  /** Overrides of any text: the same `messages` as `<SignIn/>` (`@tessera/ui`'s). */
  messages?: Partial<Messages>;
  className?: string;
  style?: CSSProperties;
}

/** What the button loads in the browser: `@tessera/ui` (theme, texts, error messages) and the portal. */
type Ui = typeof import('@tessera/ui') & { createPortal: typeof import('react-dom').createPortal };

interface Account {
  devices: TrustedDevice[];
  current: string | null;
  passkeys: Passkey[];
  pin: PinStatus | null;
}

/** What the last action said: done, a form's check that failed, or the service's failure. */
type Outcome = { status: keyof Messages } | { invalid: keyof Messages } | { failure: Failure } | null;

const METHOD: Record<TesseraUser['authMethod'], keyof Messages> = {
  OTP: 'methodOtp',
  TRUSTED_DEVICE: 'methodDevice',
  PIN: 'methodPin',
  BIOMETRIC: 'methodPasskey',
};

/**
 * The user button's own styles, after `@tessera/ui`'s shared `THEME` (its `--tessera-*` custom
 * properties, light and dark, buttons, fields and focus ring): the round trigger and the panel.
 */
const STYLES = `
:host{display:inline-block;position:relative;font-size:16px}
.trigger{display:inline-flex;align-items:center;gap:8px;width:auto;max-inline-size:100%;min-width:44px;margin:0;
padding:3px 14px 3px 3px;border-radius:999px;background:var(--_bg);font-weight:600}
.avatar{display:inline-grid;place-items:center;flex:none;inline-size:36px;block-size:36px;border-radius:50%;
background:var(--_p);color:var(--_op);font-weight:700;text-transform:uppercase}
.id{max-inline-size:14rem;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.panel{position:absolute;z-index:20;inset-block-start:calc(100% + 8px);inset-inline-end:0;
inline-size:min(22rem,calc(100vw - 16px));max-block-size:min(40rem,calc(100vh - 80px));overflow:auto;
padding:var(--_s);background:var(--_bg);color:var(--_fg);border:1px solid var(--_bd);border-radius:var(--_r);
box-shadow:0 12px 32px rgb(0 0 0/.22);text-align:start}
@media (max-width:480px){.id{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)}
.trigger{padding:3px}}
@media (prefers-reduced-motion:no-preference){.panel{animation:pop .15s ease-out}}
@keyframes pop{from{opacity:0;transform:translateY(-4px)}}
h2{font-size:1.125rem;line-height:1.3;margin:0 0 2px;overflow-wrap:anywhere}
h2:focus{outline:none}
h3{font-size:1rem;margin:0 0 6px}
.who{margin-block-end:12px}
.who strong{color:var(--_fg);overflow-wrap:anywhere}
section{border-block-start:1px solid var(--_bd);padding-block-start:12px;margin-block-start:12px}
ul{list-style:none;margin:0 0 8px;padding:0}
li{display:flex;align-items:center;justify-content:space-between;gap:8px;padding-block:4px}
li div{min-inline-size:0;overflow-wrap:anywhere}
.meta{display:block;font-size:.875rem;color:var(--_mu)}
.badge{display:inline-block;margin-inline-start:6px;padding:0 8px;border:1px solid var(--_bd);border-radius:999px;
font-size:.8125rem;font-weight:600}
li button{width:auto;flex:none;margin:0}
.sign-out{margin:var(--_s) 0 0}
`;

/**
 * The signed-in user, as a round button with their initial and identifier that opens their
 * account: trusted devices (this one marked; trust this one, remove), passkeys (add, remove), the
 * PIN (set or change; locked), and sign out. Nothing when signed out. Styled and translated as
 * `<SignIn/>`: `@tessera/ui`'s theme (`--tessera-*` custom properties, light and dark), its
 * `messages` (English, French, German) and `::part()` (`tessera-user-button::part(trigger)`, …).
 * Escape or a click outside closes the panel. Inside a `<TesseraProvider>` whose client is a full
 * `@tessera/client`; it renders in the browser only (server rendering outputs the empty host).
 *
 * @example
 * ```tsx
 * import { UserButton } from '@tessera/react';
 *
 * <header><UserButton locale="fr" onSignedOut={() => navigate('/')} /></header>
 * ```
 */
export function UserButton(props: UserButtonProps): ReactNode {
  const { user, signOut } = useSession();
  const client = useTesseraContext('UserButton').client as TesseraClient;
  const [shadow, setShadow] = useState<ShadowRoot | null>(null);
  const [ui, setUi] = useState<Ui | null>(null);
  const [brand, setBrand] = useState({ name: '', css: '', passkeys: true });
  const [open, setOpen] = useState(false);
  const [account, setAccount] = useState<Account | null>(null);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [busy, setBusy] = useState(false);
  const [pinForm, setPinForm] = useState(false);
  const trigger = useRef<HTMLButtonElement | null>(null);
  const panel = useRef<HTMLDivElement | null>(null);
  const id = useId();

  // The host's shadow root, made once per host (the host comes and goes with the user).
  const host = useCallback((element: HTMLElement | null) => {
    if (element) setShadow(element.shadowRoot ?? element.attachShadow({ mode: 'open' }));
  }, []);

  // @tessera/ui (its theme, texts and error messages), loaded in the browser as <SignIn/> loads it,
  // and react-dom's portal into the shadow root (an app without react-dom can use the rest).
  useEffect(() => {
    let live = true;
    void Promise.all([import('@tessera/ui'), import('react-dom')]).then(async ([module, dom]) => {
      if (!live) return;
      const loaded: Ui = { ...module, createPortal: dom.createPortal };
      setUi(loaded);
      const branding = await loadBrandingOf(loaded, client);
      if (live)
        setBrand({ name: branding.name, css: loaded.brandingStyle(branding), passkeys: branding.passkeys });
    });
    return () => {
      live = false;
    };
  }, [client]);

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

  const close = useCallback((refocus: boolean) => {
    setOpen(false);
    setPinForm(false);
    setOutcome(null);
    if (refocus) trigger.current?.focus();
  }, []);

  // Open: focus on the panel's heading; a press outside or focus leaving the button closes it.
  useEffect(() => {
    if (!open || !shadow) return;
    panel.current?.querySelector('h2')?.focus();
    const outside = (event: Event) => {
      if (!event.composedPath().includes(shadow.host)) close(false);
    };
    const focusOut = (event: Event) => {
      const next = (event as FocusEvent).relatedTarget as Node | null;
      if (next && !shadow.contains(next) && next !== shadow.host) close(false);
    };
    document.addEventListener('pointerdown', outside);
    shadow.addEventListener('focusout', focusOut);
    return () => {
      document.removeEventListener('pointerdown', outside);
      shadow.removeEventListener('focusout', focusOut);
    };
  }, [open, shadow, close]);

  // The control pressed may be gone with the list it was in (a removed device): the focus stays
  // in the panel, on its heading.
  useLayoutEffect(() => {
    if (open && shadow && account && !shadow.activeElement) panel.current?.querySelector('h2')?.focus();
  }, [open, shadow, account]);

  // What an action said is scrolled into view (the panel scrolls when it is taller than the window);
  // a PIN that does not match takes the focus back.
  useLayoutEffect(() => {
    if (outcome && 'invalid' in outcome)
      panel.current?.querySelector<HTMLElement>('[aria-invalid=true]')?.focus();
    const line = panel.current?.querySelector<HTMLElement>('.error:not(:empty), .status:not(:empty)');
    line?.scrollIntoView?.({ block: 'nearest' });
  }, [outcome]);

  // Inside the window at any width: the panel is moved sideways when its side would leave it (on
  // opening, when the lists change its size, when the window is resized).
  // biome-ignore lint/correctness/useExhaustiveDependencies: `account` changes the panel's size
  useLayoutEffect(() => {
    const element = panel.current;
    if (!open || !element) return;
    const place = () => {
      element.style.translate = '';
      const { left, right } = element.getBoundingClientRect();
      const width = document.documentElement.clientWidth;
      const shift = left < 8 ? 8 - left : right > width - 8 ? width - 8 - right : 0;
      if (shift) element.style.translate = `${shift}px 0`;
    };
    place();
    window.addEventListener('resize', place);
    return () => window.removeEventListener('resize', place);
  }, [open, account]);

  if (!user) return null;
  const locale = ui?.pickLocale(
    props.locale ?? null,
    typeof navigator === 'undefined' ? [] : navigator.languages,
  );
  const t: Messages | undefined = ui && locale ? { ...ui.LOCALES[locale]!, ...props.messages } : undefined;

  /** Runs an account change (one at a time), then reloads the lists and says what happened. */
  const change = (work: () => Promise<unknown>, done: keyof Messages) => () => {
    if (busy) return;
    setBusy(true);
    setOutcome(null);
    void work()
      .then(
        () => {
          setOutcome({ status: done });
          setPinForm(false);
        },
        (error: unknown) => setOutcome({ failure: ui!.toFailure(error) }),
      )
      .then(load)
      .finally(() => setBusy(false));
  };

  const hostProps = {
    ref: host,
    class: props.className,
    style: props.style,
    ...(props.theme && { theme: props.theme }),
  };
  if (!shadow || !ui || !t || !locale) return h('tessera-user-button', hostProps);

  const panelId = `${id}-account`;
  const date = (iso: string) => {
    try {
      return new Intl.DateTimeFormat(locale, { dateStyle: 'medium' }).format(new Date(iso));
    } catch {
      return iso.slice(0, 10);
    }
  };
  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key === 'Escape' && open) {
      event.stopPropagation();
      close(true);
    }
  };
  const savePin = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const [pin, again, current] = ['pin', 'again', 'current'].map((n) => String(form.get(n) ?? ''));
    if (pin !== again) {
      setOutcome({ invalid: 'errPinMismatch' });
      return;
    }
    change(async () => {
      // A PIN signs in together with a trusted device: trust this one first (as the offers do).
      await client.devices.register();
      await client.pin.set(pin!, current || undefined);
    }, 'pinSaved')();
  };
  const errorText = !outcome
    ? ''
    : 'failure' in outcome
      ? ui.failureText(outcome.failure, t, brand.name || location.host)
      : 'invalid' in outcome
        ? t[outcome.invalid]
        : '';
  const mismatch = outcome !== null && 'invalid' in outcome;
  const errorLine = h(
    'p',
    { id: `${panelId}-error`, className: 'error', part: 'error', role: 'alert' },
    errorText,
  );
  const busyProps = busy ? { 'aria-disabled': true } : {};
  const pin = account?.pin;
  const webauthn = brand.passkeys && typeof PublicKeyCredential !== 'undefined';
  const item = (
    key: string,
    name: string,
    meta: string,
    badge: string | null,
    remove: () => void,
    label: string,
  ) =>
    h(
      'li',
      { key, part: 'item' },
      h(
        'div',
        null,
        name,
        badge && h('span', { className: 'badge', part: 'badge' }, badge),
        h('span', { className: 'meta', part: 'meta' }, meta),
      ),
      h(
        'button',
        { type: 'button', part: 'button remove', 'aria-label': label, onClick: remove, ...busyProps },
        t.remove,
      ),
    );

  const content = h(
    'div',
    { lang: locale, onKeyDown },
    h('style', null, ui.THEME + STYLES + brand.css),
    h(
      'button',
      {
        ref: trigger,
        type: 'button',
        part: 'button trigger',
        className: 'trigger',
        'aria-expanded': open,
        'aria-controls': panelId,
        onClick: () => (open ? close(false) : setOpen(true)),
      },
      h('span', { className: 'avatar', part: 'avatar', 'aria-hidden': true }, initialOf(user.identifier)),
      h('span', { className: 'id', part: 'identifier' }, user.identifier),
    ),
    open &&
      h(
        'div',
        {
          ref: panel,
          id: panelId,
          part: 'panel',
          className: 'panel',
          role: 'dialog',
          'aria-labelledby': `${panelId}-title`,
          'aria-busy': busy,
        },
        h('h2', { id: `${panelId}-title`, tabIndex: -1, part: 'title' }, t.account),
        h(
          'p',
          { className: 'who text', part: 'text' },
          h('strong', null, user.identifier),
          h('br'),
          t.signedInWith.replace('{method}', t[METHOD[user.authMethod]]),
        ),
        // The PIN form's failures show in the form, beside its fields; the others at the top.
        !pinForm && errorLine,
        h(
          'p',
          { className: 'status', part: 'status', role: 'status' },
          outcome && 'status' in outcome ? `✓ ${t[outcome.status]}` : '',
        ),
        h(
          'section',
          { 'aria-labelledby': `${panelId}-devices`, part: 'section devices' },
          h('h3', { id: `${panelId}-devices` }, t.devices),
          account &&
            (account.devices.length === 0
              ? h('p', { className: 'text' }, t.noDevices)
              : h(
                  'ul',
                  { part: 'list' },
                  ...account.devices.map((d) =>
                    item(
                      d.deviceId,
                      d.name,
                      t.addedOn.replace('{date}', date(d.createdAt)),
                      d.deviceId === account.current ? t.thisDevice : null,
                      change(() => client.devices.remove(d.deviceId), 'deviceRemoved'),
                      // Devices often share a name: this one is told apart.
                      t.removeDevice.replace(
                        '{name}',
                        d.deviceId === account.current ? `${d.name} (${t.thisDevice})` : d.name,
                      ),
                    ),
                  ),
                )),
          account?.current === null &&
            h(
              'button',
              {
                type: 'button',
                part: 'button trust',
                onClick: change(() => client.devices.register(), 'trusted'),
                ...busyProps,
              },
              t.trust,
            ),
        ),
        h(
          'section',
          { 'aria-labelledby': `${panelId}-passkeys`, part: 'section passkeys' },
          h('h3', { id: `${panelId}-passkeys` }, t.passkeys),
          account &&
            (account.passkeys.length === 0
              ? h('p', { className: 'text' }, t.noPasskeys)
              : h(
                  'ul',
                  { part: 'list' },
                  ...account.passkeys.map((p) =>
                    item(
                      p.passkeyId,
                      p.name,
                      t.addedOn.replace('{date}', date(p.createdAt)),
                      null,
                      change(() => client.passkeys.remove(p.passkeyId), 'passkeyRemoved'),
                      t.removePasskey.replace('{name}', p.name),
                    ),
                  ),
                )),
          webauthn &&
            h(
              'button',
              {
                type: 'button',
                part: 'button add-passkey',
                onClick: change(() => client.passkeys.register(), 'passkeyAdded'),
                ...busyProps,
              },
              t.addPasskey,
            ),
        ),
        h(
          'section',
          { 'aria-labelledby': `${panelId}-pin`, part: 'section pin' },
          h('h3', { id: `${panelId}-pin` }, t.pin),
          pin &&
            h(
              'p',
              { className: pin.locked ? 'error' : 'text', part: 'pin-state' },
              pin.locked ? t.errPinLocked : pin.pinSet ? t.pinSet : t.pinNone,
            ),
          pin &&
            !pinForm &&
            h(
              'button',
              { type: 'button', part: 'button set-pin', onClick: () => setPinForm(true) },
              pin.pinSet ? t.changePin : t.setPin,
            ),
          pinForm &&
            h(
              'form',
              { onSubmit: savePin, noValidate: true, part: 'form' },
              pin?.pinSet && pinField(`${panelId}-current`, 'current', t.currentPin, false),
              pinField(`${panelId}-new`, 'pin', t.newPin, true),
              pinField(
                `${panelId}-again`,
                'again',
                t.confirmPin,
                false,
                mismatch ? `${panelId}-error` : undefined,
              ),
              errorLine,
              h(
                'div',
                { className: 'row' },
                h(
                  'button',
                  { type: 'submit', part: 'button primary', className: 'primary', ...busyProps },
                  t.savePin,
                ),
                h(
                  'button',
                  { type: 'button', part: 'button cancel', onClick: () => setPinForm(false) },
                  t.cancel,
                ),
              ),
            ),
        ),
        h(
          'button',
          {
            type: 'button',
            part: 'button sign-out',
            className: 'sign-out',
            onClick: () =>
              void signOut().then(() => {
                close(false);
                props.onSignedOut?.();
              }),
          },
          t.signOut,
        ),
      ),
  );
  return h('tessera-user-button', hostProps, ui.createPortal(content, shadow));
}

/** A PIN field of the PIN form (the first one takes the focus). */
function pinField(id: string, name: string, label: string, autoFocus: boolean, error?: string): ReactNode {
  return h(
    'div',
    { className: 'field', part: 'field' },
    h('label', { htmlFor: id, part: 'label' }, label),
    h('input', {
      id,
      name,
      type: 'password',
      inputMode: 'numeric',
      autoComplete: 'off',
      maxLength: 12,
      autoFocus,
      part: 'input pin',
      ...(error && { 'aria-invalid': true, 'aria-errormessage': error }),
    }),
  );
}

/** The first letter of the identifier (an e-mail's name, a phone number's first digit). */
function initialOf(identifier: string): string {
  const first = identifier.replace(/^\+/, '').match(/\p{L}|\p{N}/u);
  return first ? first[0].toLocaleUpperCase() : '?';
}

/** The project's branding (name, colours, passkeys), as `<SignIn/>` reads it. */
function loadBrandingOf(ui: Ui, client: TesseraClient) {
  return client.issuer && client.apiKeyId
    ? ui.loadBranding(client.issuer, client.apiKeyId)
    : Promise.resolve(ui.NO_BRANDING);
}
