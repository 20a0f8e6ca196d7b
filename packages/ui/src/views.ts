import type { Branding } from './branding.js';
import { button, field, h } from './dom.js';
import { format, type Messages } from './messages/index.js';

/** What a step's view needs from the element: its texts and its actions. */
export interface ViewContext {
  t: Messages;
  branding: Branding;
  locale: string;
  /** The identifier as typed, and the chosen country (ISO code) for phone numbers. */
  identifier: string;
  country: string;
  passkeys: boolean;
  sendCode(form: HTMLFormElement, identifier: string, country: string): void;
  passkey(trigger: HTMLButtonElement): void;
  verifyCode(form: HTMLFormElement, code: string): void;
  resend(trigger: HTMLButtonElement): void;
  show(step: 'identifier' | 'pin'): void;
  deviceSignIn(trigger: HTMLButtonElement): void;
  pinSignIn(form: HTMLFormElement, pin: string): void;
}

/** A form that never reloads the page; `onsubmit` gets the form. */
const form = (onsubmit: (form: HTMLFormElement) => void, ...children: Array<Node | null | false>) => {
  const element = h('form', { part: 'form', novalidate: true }, ...children);
  element.addEventListener('submit', (event) => {
    event.preventDefault();
    onsubmit(element);
  });
  return element;
};

/** The submit button of a form. */
const submit = (label: string) =>
  h('button', { type: 'submit', part: 'button primary', class: 'primary' }, label);

/** The identifier step: e-mail or phone (with the project's SMS countries), the passkey button. */
export function identifierView(c: ViewContext): Node[] {
  const { t } = c;
  const input = h('input', {
    type: 'text',
    name: 'username',
    autocomplete: 'username webauthn',
    autocapitalize: 'none',
    spellcheck: 'false',
    required: true,
    part: 'input',
    value: c.identifier,
  });
  const countries = c.branding.sms_countries;
  let select: HTMLSelectElement | undefined;
  if (countries.length > 0) {
    let names: Intl.DisplayNames | undefined;
    try {
      names = new Intl.DisplayNames([c.locale], { type: 'region' });
    } catch {}
    const options = countries
      .map(({ country, calling_code }) => ({
        country,
        label: `${names?.of(country) ?? country} (+${calling_code})`,
      }))
      .sort((a, b) => a.label.localeCompare(b.label, c.locale));
    select = h(
      'select',
      { part: 'select', name: 'country' },
      ...options.map((o) => h('option', { value: o.country, selected: o.country === c.country }, o.label)),
    );
  }
  const passkey = button(t.passkey, 'secondary passkey');
  passkey.onclick = () => c.passkey(passkey);
  return [
    form(
      (f) => c.sendCode(f, input.value, select?.value ?? ''),
      field('identifier', t.identifier, input, t.identifierHint),
      select ? field('country', t.country, select) : null,
      submit(t.sendCode),
    ),
    ...(c.passkeys ? [h('div', { class: 'or', part: 'divider' }, t.or), passkey] : []),
  ];
}

/** The code step: one field for the whole code (typed, pasted or filled by the browser). */
export function codeView(
  c: ViewContext,
  to: string,
): { nodes: Node[]; input: HTMLInputElement; resend: HTMLButtonElement } {
  const { t } = c;
  const input = h('input', {
    type: 'text',
    name: 'code',
    inputmode: 'numeric',
    autocomplete: 'one-time-code',
    required: true,
    part: 'input code',
  });
  const resend = button(t.resend, 'secondary resend');
  resend.onclick = () => c.resend(resend);
  const element = form(
    (f) => c.verifyCode(f, input.value.replace(/\D/g, '')),
    field('code', t.code, input),
    submit(t.verify),
  );
  input.addEventListener('input', () => {
    const digits = input.value.replace(/\D/g, '');
    if (digits !== input.value) input.value = digits.slice(0, 6);
    if (digits.length >= 6) element.requestSubmit();
  });
  return {
    nodes: [
      h('p', { class: 'text', part: 'text' }, format(t.codeSent, { to })),
      element,
      resend,
      button(t.another, 'link another', () => c.show('identifier')),
    ],
    input,
    resend,
  };
}

/** One-tap sign-in on a trusted device. */
export function deviceView(c: ViewContext): Node[] {
  const go = button(c.t.deviceSignIn, 'primary device');
  go.onclick = () => c.deviceSignIn(go);
  return [
    h('p', { class: 'text', part: 'text' }, c.t.deviceText),
    go,
    button(c.t.usePin, 'secondary use-pin', () => c.show('pin')),
    button(c.t.otherWay, 'link other-way', () => c.show('identifier')),
  ];
}

/** The PIN pad: a masked field for keyboards, digit keys for touch. */
export function pinView(c: ViewContext): Node[] {
  const { t } = c;
  const input = h('input', {
    type: 'password',
    name: 'pin',
    inputmode: 'numeric',
    autocomplete: 'off',
    maxlength: 12,
    required: true,
    part: 'input pin',
  });
  // Out of the tab order (the field takes the keyboard); a press leaves the focus in the field.
  const key = (label: string, name: string, press: () => void) =>
    h(
      'button',
      {
        type: 'button',
        part: 'pin-key',
        'aria-label': name,
        tabindex: -1,
        onclick: () => {
          press();
          input.focus();
        },
      },
      label,
    );
  const digit = (d: string) =>
    key(d, format(t.pinKey, { n: d }), () => {
      if (input.value.length < 12) input.value += d;
    });
  const pad = h(
    'div',
    { class: 'pad', part: 'pin-pad' },
    ...'123456789'.split('').map(digit),
    key('⌫', t.pinDelete, () => {
      input.value = input.value.slice(0, -1);
    }),
    digit('0'),
    key('✓', t.verify, () => element.requestSubmit()),
  );
  const element = form((f) => c.pinSignIn(f, input.value), field('pin', t.pin, input), pad, submit(t.verify));
  return [element, button(t.otherWay, 'link other-way', () => c.show('identifier'))];
}
