import {
  type AuthMethod,
  createTesseraClient,
  memoryStorage,
  type SignInResult,
  type TesseraClient,
  type TokenStorage,
} from '@tessera/client';
import { type Branding, brandingStyle, loadBranding, NO_BRANDING, toIdentifier } from './branding.js';
import { h } from './dom.js';
import { type Failure, failureText, toFailure } from './errors.js';
import { format, LOCALES, type Messages, pickLocale } from './messages/index.js';
import { availableOffers, type Offers, offersView } from './offers.js';
import { STYLES } from './styles.js';
import { codeView, deviceView, identifierView, pinView, type ViewContext } from './views.js';

/** The steps of a sign-in, as the `step` event names them. */
export type Step = 'loading' | 'identifier' | 'code' | 'device' | 'pin' | 'offers' | 'done';

/**
 * The outcome of a sign-in, in the `signed-in` event and from {@link TesseraSignIn.whenSignedIn}:
 * who signed in and how, and the tokens when they were asked for (`get-oauth-token`, default on).
 *
 * @example
 * ```ts
 * form.addEventListener('signed-in', (event) => {
 *   const { userId, authMethod, accessToken } = (event as CustomEvent<SignedInDetail>).detail;
 * });
 * ```
 */
export interface SignedInDetail {
  userId: string;
  authMethod: AuthMethod;
  /** True when the tokens were obtained and stored by the client. */
  tokensStored: boolean;
  /** The access token (for the page's own server, say), or null without tokens. */
  accessToken: string | null;
  /** The ID token, or null without tokens. */
  idToken: string | null;
}

/**
 * The `error` event's detail: the stable code (for logs and analytics), the text shown, and the
 * client's `detail` (for developers, English, never shown by the element).
 */
export interface ErrorDetail {
  code: string;
  message: string;
  detail: string;
}

/** The autofill's failures that are shown: those after the user picked a passkey. */
const AUTOFILL_SHOWN = ['passkey_verification_failed', 'passkey_not_found', 'user_verification_required'];

const event = <T>(name: string, detail: T) =>
  new CustomEvent<T>(name, { detail, bubbles: true, composed: true });

/**
 * `<tessera-sign-in>`: the whole passwordless sign-in of a Tessera project (code by e-mail or SMS,
 * passkey, trusted device, PIN, and the offers after a sign-in by code), in a shadow root.
 *
 * Attributes: `issuer`, `api-key-id` (or set the `client` property), `locale` (`en`, `fr`, `de`;
 * else the browser's), `theme` (`light`, `dark`; else the system's), `branding` (JSON, instead of
 * reading it from the service), `messages` (JSON overrides of any text), `storage="memory"` (keep
 * no tokens in browser storage), `get-oauth-token="false"` (confirm the user, issue no tokens),
 * `offers="none"` (no offers after a sign-in by code), `autofill="off"` (no passkeys in the field's
 * autofill). Events: `step`, `error`, `signed-in`.
 *
 * @example
 * ```html
 * <tessera-sign-in issuer="https://auth.example.com" api-key-id="pk_…"></tessera-sign-in>
 * <script type="module">
 *   import '@tessera/ui';
 *   document.querySelector('tessera-sign-in').addEventListener('signed-in', () => location.assign('/'));
 * </script>
 * ```
 */
export class TesseraSignIn extends HTMLElement {
  static readonly observedAttributes = [
    'issuer',
    'api-key-id',
    'locale',
    'branding',
    'messages',
    'storage',
    'autofill',
  ];
  readonly #root: ShadowRoot;
  readonly #brand = h('style');
  readonly #card = h('div', { part: 'card', class: 'card' });
  readonly #logo = h('img', { part: 'logo', alt: '' });
  readonly #name = h('span', { part: 'name', class: 'name' });
  readonly #title = h('h2', { part: 'title', tabindex: -1 });
  readonly #error = h('p', { part: 'error', class: 'error', role: 'alert', id: 'error' });
  readonly #live = h('p', { class: 'sr', 'aria-live': 'polite', 'aria-atomic': 'true' });
  readonly #body = h('div', { class: 'step', part: 'step' });
  #client: TesseraClient | undefined;
  #givenClient: TesseraClient | undefined;
  #branding: Branding = NO_BRANDING;
  #givenBranding: Branding | undefined;
  #messages: Partial<Messages> = {};
  #step: Step = 'loading';
  #identifier = '';
  #country = '';
  #challenge: { id: string; to: string; resendAt: number; channel: string } | undefined;
  #offers: { offers: Offers; result: SignInResult } | undefined;
  #stepEnd = new AbortController();
  #working = false;
  #errorText: ((t: Messages) => string) | undefined;
  #result: SignedInDetail | undefined;
  #waiting: Array<(detail: SignedInDetail) => void> = [];
  #generation = 0;

  constructor() {
    super();
    this.#root = this.attachShadow({ mode: 'open' });
    this.#root.append(h('style', {}, STYLES), this.#brand, this.#card);
  }

  /** The `@tessera/client` the element signs in with; by default one made from its attributes. */
  get client(): TesseraClient | undefined {
    return this.#client;
  }
  set client(client: TesseraClient | undefined) {
    this.#givenClient = client;
    this.#restart();
  }

  /** Overrides of any text (`{ sendCode: 'Email me a code' }`), over the chosen language. */
  get messages(): Partial<Messages> {
    return this.#messages;
  }
  set messages(messages: Partial<Messages>) {
    this.#messages = { ...messages };
    if (this.isConnected) this.#show(this.#step, true);
  }

  /** The project's branding and sign-in options; set it to skip reading them from the service. */
  get branding(): Branding {
    return this.#branding;
  }
  set branding(branding: Partial<Branding> | undefined) {
    this.#givenBranding = branding && { ...NO_BRANDING, ...branding };
    this.#restart();
  }

  /** The step shown now. */
  get step(): Step {
    return this.#step;
  }

  /** The last sign-in's outcome, or undefined before one. */
  get result(): SignedInDetail | undefined {
    return this.#result;
  }

  /** Resolves with the outcome once the user has signed in (at once when they already have). */
  whenSignedIn(): Promise<SignedInDetail> {
    return this.#result
      ? Promise.resolve(this.#result)
      : new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** Back to the first step, forgetting the code sent and the outcome. */
  reset(): void {
    this.#result = undefined;
    this.#restart();
  }

  connectedCallback(): void {
    this.#restart();
  }

  disconnectedCallback(): void {
    this.#stepEnd.abort();
    this.#generation++;
  }

  attributeChangedCallback(name: string, before: string | null, after: string | null): void {
    if (before === after || !this.isConnected) return;
    if (name === 'locale' || name === 'messages' || name === 'autofill') this.#show(this.#step, true);
    else this.#restart();
  }

  get #t(): Messages {
    let fromAttribute: Partial<Messages> = {};
    try {
      fromAttribute = JSON.parse(this.getAttribute('messages') ?? '{}') as Partial<Messages>;
    } catch {}
    return { ...LOCALES[this.#locale]!, ...fromAttribute, ...this.#messages };
  }

  get #locale(): string {
    return pickLocale(
      this.getAttribute('locale'),
      typeof navigator === 'undefined' ? [] : navigator.languages,
    );
  }

  get #tokens(): boolean {
    return this.getAttribute('get-oauth-token') !== 'false';
  }

  /** Makes (or takes) the client, reads the branding, and shows the first step. */
  #restart(): void {
    if (!this.isConnected) return;
    const generation = ++this.#generation;
    this.#challenge = undefined;
    this.#client = this.#givenClient ?? this.#ownClient();
    this.#show('loading');
    const client = this.#client;
    if (!client) {
      this.#setError((t) => t.errNotSetUp);
      return;
    }
    const issuer = this.getAttribute('issuer') ?? client.issuer;
    const apiKeyId = this.getAttribute('api-key-id') ?? client.apiKeyId;
    const branding = this.#givenBranding ?? this.#brandingAttribute();
    void Promise.all([
      branding ?? (issuer && apiKeyId ? loadBranding(issuer, apiKeyId) : NO_BRANDING),
      client.devices.currentId().catch(() => null),
    ]).then(([read, deviceId]) => {
      if (generation !== this.#generation) return;
      this.#branding = read;
      this.#brand.textContent = brandingStyle(read);
      this.#country ||= this.#defaultCountry(read);
      this.#show(deviceId ? (read.device_requires_pin ? 'pin' : 'device') : 'identifier');
    });
  }

  #brandingAttribute(): Branding | undefined {
    const raw = this.getAttribute('branding');
    if (!raw) return undefined;
    try {
      return { ...NO_BRANDING, ...(JSON.parse(raw) as Partial<Branding>) };
    } catch {
      return undefined;
    }
  }

  #ownClient(): TesseraClient | undefined {
    const issuer = this.getAttribute('issuer');
    const apiKeyId = this.getAttribute('api-key-id');
    if (!issuer || !apiKeyId) return undefined;
    const memory = this.getAttribute('storage') === 'memory';
    return createTesseraClient({ issuer, apiKeyId, ...(memory && { storage: tokensInMemory() }) });
  }

  /** The region of the page's language (`fr-CA` → CA) when SMS may go there, else the first country. */
  #defaultCountry(branding: Branding): string {
    const regions = (typeof navigator === 'undefined' ? [] : navigator.languages).map((l) =>
      l.split('-')[1]?.toUpperCase(),
    );
    const codes = branding.sms_countries.map((c) => c.country);
    return regions.find((r) => r && codes.includes(r)) ?? codes[0] ?? '';
  }

  /** Renders a step, moves focus to it and tells the page. */
  #show(step: Step, keepError = false): void {
    this.#stepEnd.abort();
    this.#stepEnd = new AbortController();
    const changed = step !== this.#step;
    this.#step = step;
    const t = this.#t;
    const name = this.#branding.name;
    this.#card.lang = this.#locale;
    if (keepError) this.#error.textContent = this.#errorText?.(t) ?? '';
    else this.#setError();
    this.#logo.hidden = !this.#branding.logo_url;
    if (this.#branding.logo_url) {
      this.#logo.src = this.#branding.logo_url;
      this.#logo.alt = name ? format(t.logo, { name }) : '';
    }
    this.#name.textContent = name;
    const header =
      name || this.#branding.logo_url ? h('header', { part: 'header' }, this.#logo, this.#name) : null;
    const titles: Record<Step, string> = {
      loading: t.loading,
      identifier: name ? format(t.signInTo, { name }) : t.signIn,
      code: t.codeTitle,
      device: t.deviceTitle,
      pin: t.pinTitle,
      offers: t.offersTitle,
      done: t.doneTitle,
    };
    this.#title.textContent = titles[step];
    this.#body.replaceChildren(...this.#view(step));
    this.#card.replaceChildren(
      ...[header, this.#title, this.#error, this.#body, this.#live].filter((n) => n !== null),
    );
    this.#card.setAttribute('aria-busy', String(step === 'loading'));
    if (step === 'loading') return;
    const first = this.#body.querySelector<HTMLElement>('input:not([type=hidden]), select');
    (step === 'offers' || step === 'done' || !first
      ? this.#title
      : (this.#body.querySelector('input') ?? first)
    ).focus();
    if (changed) this.dispatchEvent(event('step', { step }));
  }

  #view(step: Step): Node[] {
    const c = this.#context();
    switch (step) {
      case 'identifier':
        void this.#autofill();
        return identifierView(c);
      case 'code': {
        const view = codeView(c, this.#challenge?.to ?? '');
        this.#countdown(view.resend);
        this.#webOtp(view.input);
        return view.nodes;
      }
      case 'device':
        return deviceView(c);
      case 'pin':
        return pinView(c);
      case 'offers': {
        const { offers, result } = this.#offers!;
        return offersView(this.#client!, offers, {
          t: c.t,
          act: (trigger, work) => this.#act(trigger, work),
          fail: (key, input) => this.#setError((t) => t[key], input),
          announce: (text) => this.#announce(text),
          finish: () => void this.#finish(result),
        });
      }
      case 'done': {
        const name = this.#branding.name;
        return name ? [h('p', { class: 'text', part: 'text' }, format(this.#t.doneText, { name }))] : [];
      }
      default:
        return [];
    }
  }

  #context(): ViewContext {
    return {
      t: this.#t,
      branding: this.#branding,
      locale: this.#locale,
      identifier: this.#identifier,
      country: this.#country,
      passkeys: this.#branding.passkeys && typeof PublicKeyCredential !== 'undefined',
      sendCode: (form, identifier, country) => {
        this.#identifier = identifier;
        this.#country = country;
        const calling = this.#branding.sms_countries.find((c) => c.country === country)?.calling_code;
        void this.#act(form.querySelector('button[type=submit]'), () =>
          this.#sendCode(toIdentifier(identifier, calling)),
        );
      },
      passkey: (trigger) =>
        void this.#act(trigger, async () => {
          await this.#signedIn(await this.#client!.passkeys.signIn({ getOAuthToken: this.#tokens }));
        }).then(() => {
          if (this.#step === 'identifier') void this.#autofill();
        }),
      verifyCode: (form, code) =>
        void this.#act(form.querySelector('button[type=submit]'), async () => {
          const challenge = this.#challenge!;
          await this.#signedIn(
            await this.#client!.otp.complete(challenge.id, code, { getOAuthToken: this.#tokens }),
          );
        }),
      resend: (trigger) =>
        void this.#act(trigger, async () => {
          await this.#sendCode(this.#challenge!.to);
          this.#announce(this.#t.resent);
        }),
      show: (step) => this.#show(step),
      deviceSignIn: (trigger) =>
        void this.#act(trigger, async () => {
          await this.#signedIn(await this.#client!.devices.signIn({ getOAuthToken: this.#tokens }));
        }),
      pinSignIn: (form, pin) =>
        void this.#act(form.querySelector('button[type=submit]'), async () => {
          await this.#signedIn(await this.#client!.pin.signIn(pin, { getOAuthToken: this.#tokens }));
        }),
    };
  }

  async #sendCode(identifier: string): Promise<void> {
    const started = await this.#client!.otp.start(identifier);
    this.#challenge = {
      id: started.challengeId,
      to: identifier,
      channel: started.channel,
      resendAt: Date.now() + started.resendAfter * 1000,
    };
    this.#show('code');
  }

  /** The resend button's countdown, following the service's `resend_after`. */
  #countdown(resend: HTMLButtonElement): void {
    const t = this.#t;
    const tick = () => {
      const left = Math.ceil(((this.#challenge?.resendAt ?? 0) - Date.now()) / 1000);
      resend.disabled = left > 0;
      resend.textContent = left > 0 ? format(t.resendIn, { s: left }) : t.resend;
      if (left <= 0) clearInterval(timer);
      return left;
    };
    const timer = setInterval(() => {
      if (tick() <= 0) this.#announce(t.resendReady);
    }, 1000);
    this.#stepEnd.signal.addEventListener('abort', () => clearInterval(timer));
    const left = tick();
    if (left > 0) this.#announce(format(t.resendWait, { s: left }));
  }

  /** WebOTP: the browser reads the code from the SMS (`@domain #123456`) where it can. */
  #webOtp(input: HTMLInputElement): void {
    if (this.#challenge?.channel !== 'sms' || typeof window === 'undefined' || !('OTPCredential' in window))
      return;
    const signal = this.#stepEnd.signal;
    (
      navigator.credentials.get({
        otp: { transport: ['sms'] },
        signal,
      } as CredentialRequestOptions) as Promise<(Credential & { code?: string }) | null>
    ).then(
      (credential) => {
        if (!credential?.code || signal.aborted) return;
        input.value = credential.code;
        input.form?.requestSubmit();
      },
      () => {},
    );
  }

  /** Passkeys in the identifier field's autofill, while the identifier step shows. */
  async #autofill(): Promise<void> {
    const client = this.#client;
    if (
      !client ||
      !this.#branding.passkeys ||
      this.getAttribute('autofill') === 'off' ||
      !(await client.passkeys.browserSupportsAutofill().catch(() => false))
    )
      return;
    const signal = this.#stepEnd.signal;
    if (signal.aborted) return;
    try {
      await this.#signedIn(await client.passkeys.signInWithAutofill({ signal, getOAuthToken: this.#tokens }));
    } catch (error) {
      // Only what follows a passkey the user picked is shown: the autofill is not something they
      // asked for, so its other failures (a refused start, no passkey) stay silent.
      const failure = toFailure(error);
      if (!signal.aborted && AUTOFILL_SHOWN.includes(failure.code)) this.#fail(failure);
    }
  }

  /** Runs an action: one at a time, its trigger marked busy, its failure shown. True on success. */
  async #act(trigger: HTMLButtonElement | null, work: () => Promise<void>): Promise<boolean> {
    if (this.#working) return false;
    this.#working = true;
    this.#setError();
    const label = trigger?.textContent ?? '';
    trigger?.setAttribute('aria-disabled', 'true');
    if (trigger) trigger.textContent = this.#t.wait;
    try {
      await work();
      return true;
    } catch (error) {
      this.#fail(toFailure(error));
      return false;
    } finally {
      this.#working = false;
      trigger?.removeAttribute('aria-disabled');
      if (trigger?.isConnected && trigger.textContent === this.#t.wait) trigger.textContent = label;
    }
  }

  /** Shows a failure's message, goes to the step it calls for, and tells the page. */
  #fail(failure: Failure): void {
    const text = (t: Messages) => failureText(failure, t, this.#branding.name || location.host);
    const message = text(this.#t);
    const go = failure.entry.go;
    if (go && go !== this.#step) this.#show(go);
    const input = this.#body.querySelector('input');
    this.#setError(text, input ?? undefined);
    if (input && (this.#step === 'pin' || failure.code === 'invalid_code')) input.value = '';
    this.dispatchEvent(event<ErrorDetail>('error', { code: failure.code, message, detail: failure.detail }));
  }

  /** Shows an error (its text in the current language, again after a change of language), or none. */
  #setError(text?: (t: Messages) => string, input?: HTMLInputElement): void {
    this.#errorText = text;
    this.#error.textContent = text?.(this.#t) ?? '';
    for (const field of this.#body.querySelectorAll('[aria-invalid]')) field.removeAttribute('aria-invalid');
    if (!input || !text) return;
    input.setAttribute('aria-invalid', 'true');
    input.setAttribute('aria-errormessage', 'error');
    input.focus();
  }

  #announce(text: string): void {
    this.#live.textContent = text;
  }

  /** After a sign-in: the offers (after a code, with tokens), else the end. */
  async #signedIn(result: SignInResult): Promise<void> {
    const client = this.#client!;
    if (result.authMethod === 'OTP' && result.tokensStored && this.getAttribute('offers') !== 'none') {
      const offers = await availableOffers(client, this.#branding.passkeys);
      if (offers.trust || offers.pin || offers.passkey) {
        this.#offers = { offers, result };
        this.#show('offers');
        return;
      }
    }
    await this.#finish(result);
  }

  async #finish(result: SignInResult): Promise<void> {
    const client = this.#client!;
    const [accessToken, idToken] = result.tokensStored
      ? await Promise.all([client.getAccessToken(), client.getIdToken()])
      : [null, null];
    this.#result = { ...result, accessToken, idToken };
    this.#show('done');
    this.dispatchEvent(event('signed-in', this.#result));
    for (const resolve of this.#waiting.splice(0)) resolve(this.#result);
  }
}

/**
 * `storage="memory"`: the token bundle (`tessera.<api key id>.session`) in memory only, as a hosted
 * page that hands it to its server wants; this device's id and the passkey flag, no secrets, in
 * localStorage as by default. (All in memory forgot the trusted device at the page's next load:
 * "Trust this device" and a PIN did nothing on the hosted pages, whose key pair IndexedDB kept.)
 */
function tokensInMemory(): TokenStorage {
  const memory = memoryStorage();
  const local = typeof localStorage === 'undefined' ? undefined : localStorage;
  const kept = (key: string) => (local && !key.endsWith('.session') ? local : undefined);
  return {
    get: async (key) => kept(key)?.getItem(key) ?? memory.get(key),
    set: async (key, value) => {
      const store = kept(key);
      if (store) store.setItem(key, value);
      else await memory.set(key, value);
    },
    remove: async (key) => {
      kept(key)?.removeItem(key);
      await memory.remove(key);
    },
  };
}
