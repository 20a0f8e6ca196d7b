import type { TesseraClient } from '@tessera/client';
import { button, field, h } from './dom.js';
import type { Messages } from './messages/index.js';

/** The offers that apply after a sign-in by code. */
export interface Offers {
  trust: boolean;
  pin: boolean;
  passkey: boolean;
}

/** Which offers apply: an untrusted device, no PIN yet, no passkey yet (where passkeys work). */
export async function availableOffers(client: TesseraClient, passkeys: boolean): Promise<Offers> {
  const webauthn = passkeys && typeof PublicKeyCredential !== 'undefined';
  const [device, pin, keys] = await Promise.all([
    client.devices.current().catch(() => undefined),
    client.pin.status().catch(() => undefined),
    webauthn ? client.passkeys.list().catch(() => undefined) : undefined,
  ]);
  return {
    trust: device === null,
    pin: pin?.pinSet === false && !pin.locked,
    passkey: keys?.length === 0,
  };
}

/** How the offers view reports to the element. */
export interface OfferHooks {
  t: Messages;
  /** Runs an action with the element's busy state and error handling; resolves true on success. */
  act(trigger: HTMLButtonElement, work: () => Promise<void>): Promise<boolean>;
  /** Shows a message (validation) in the element's error region. */
  fail(text: keyof Messages, field?: HTMLInputElement): void;
  announce(text: string): void;
  finish(): void;
}

/**
 * The offers after a sign-in by code: trust this device, set a PIN, add a passkey. Each is
 * optional ("Not now"), each ends in a status line; Continue finishes whatever is left.
 */
export function offersView(client: TesseraClient, offers: Offers, hooks: OfferHooks): Node[] {
  const { t } = hooks;
  const done = button(t.continue, 'primary continue', () => hooks.finish());
  const sections: HTMLElement[] = [];
  /** Focus moves to the next offer still open, else to Continue. */
  const next = (from: HTMLElement) => {
    const after = sections.slice(sections.indexOf(from) + 1).concat(sections);
    const target = after
      .find((s) => s !== from && s.isConnected && s.querySelector('button'))
      ?.querySelector('button');
    (target ?? done).focus();
  };
  const completed = (section: HTMLElement, text: string) => {
    // Done: a later re-render (another language, say) leaves it out.
    offers[section.dataset.offer as keyof Offers] = false;
    section.querySelector('.row')?.remove();
    section.querySelector('form')?.remove();
    section.append(h('p', { class: 'status', part: 'status' }, `✓ ${text}`));
    hooks.announce(text);
    next(section);
  };
  const offer = (
    id: string,
    title: string,
    text: string,
    label: string,
    run: (s: HTMLElement, b: HTMLButtonElement) => void,
  ) => {
    const action = button(label, `secondary offer-${id}`);
    const skip = button(t.notNow, `link skip-${id}`);
    const section = h(
      'section',
      { part: 'offer', class: 'offer', 'aria-labelledby': `offer-${id}` },
      h('h3', { id: `offer-${id}` }, title),
      h('p', { class: 'text', part: 'text' }, text),
      h('div', { class: 'row' }, action, skip),
    );
    action.onclick = () => run(section, action);
    section.dataset.offer = id;
    skip.onclick = () => {
      next(section);
      section.remove();
    };
    sections.push(section);
    return section;
  };
  const trust = async () => {
    await client.devices.register();
  };
  const pinForm = (section: HTMLElement) => {
    const pin = pinInput();
    const again = pinInput();
    const save = h('button', { type: 'submit', part: 'button primary', class: 'primary' }, t.savePin);
    const element = h(
      'form',
      { part: 'form', novalidate: true },
      field('new-pin', t.newPin, pin),
      field('confirm-pin', t.confirmPin, again),
      save,
    );
    element.addEventListener('submit', (event) => {
      event.preventDefault();
      if (pin.value !== again.value) return hooks.fail('errPinMismatch', again);
      void hooks
        .act(save, async () => {
          await trust();
          await client.pin.set(pin.value);
        })
        .then((ok) => ok && completed(section, t.pinSaved));
    });
    section.querySelector('.row')?.replaceWith(element);
    pin.focus();
  };
  return [
    h('p', { class: 'text', part: 'text' }, t.offersText),
    offers.trust &&
      offer(
        'trust',
        t.trust,
        t.trustText,
        t.trust,
        (section, b) => void hooks.act(b, trust).then((ok) => ok && completed(section, t.trusted)),
      ),
    offers.pin && offer('pin', t.setPin, t.setPinText, t.setPin, (section) => pinForm(section)),
    offers.passkey &&
      offer(
        'passkey',
        t.addPasskey,
        t.addPasskeyText,
        t.addPasskey,
        (section, b) =>
          void hooks
            .act(b, async () => {
              await client.passkeys.register();
            })
            .then((ok) => ok && completed(section, t.passkeyAdded)),
      ),
    done,
  ].filter((node): node is HTMLElement => node !== false);
}

const pinInput = () =>
  h('input', {
    type: 'password',
    inputmode: 'numeric',
    autocomplete: 'off',
    maxlength: 12,
    required: true,
    part: 'input pin',
  });
