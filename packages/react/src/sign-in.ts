import type { TesseraClient } from '@tessera/client';
import type { Branding, ErrorDetail, Messages, SignedInDetail, Step, TesseraSignIn } from '@tessera/ui';
import { type CSSProperties, createElement, type ReactNode, useEffect, useLayoutEffect, useRef } from 'react';
import type { SignIn as SignInMethods } from './hooks.js';
import { useOptionalTesseraContext } from './provider.js';

/**
 * What `useSignIn()` returns (the name is shared with the {@link SignIn} component, a value: one
 * import gives both).
 *
 * @example
 * ```ts
 * const methods: SignIn = useSignIn();
 * ```
 */
export interface SignIn extends SignInMethods {}

/**
 * Props of {@link SignIn}: the element's options and callbacks for its events.
 *
 * @example
 * ```tsx
 * const props: SignInProps = { locale: 'fr', onSignedIn: () => navigate('/') };
 * ```
 */
export interface SignInProps {
  /** The client to sign in with; default the `<TesseraProvider>`'s. */
  client?: TesseraClient;
  /** Without a provider or `client`: the service's URL and the project's API key id. */
  issuer?: string;
  apiKeyId?: string;
  /** `en`, `fr` or `de`; default the browser's language. */
  locale?: string;
  /** `light` or `dark`; default the system's. */
  theme?: 'light' | 'dark';
  /** Overrides of any text. */
  messages?: Partial<Messages>;
  /** The project's branding, when the page has it already (else it is read from the service). */
  branding?: Partial<Branding>;
  /** False: confirm who the user is without issuing tokens. Default true. */
  getOAuthToken?: boolean;
  /** False: no offers (trust this device, PIN, passkey) after a sign-in by code. Default true. */
  offers?: boolean;
  onSignedIn?(detail: SignedInDetail): void;
  onError?(detail: ErrorDetail): void;
  onStep?(step: Step): void;
  className?: string;
  style?: CSSProperties;
}

/**
 * The whole sign-in, as `<tessera-sign-in>` of `@tessera/ui` (loaded in the browser only, so server
 * rendering outputs the empty element): code by e-mail or SMS, passkey, trusted device, PIN, and the
 * offers after a sign-in by code. Inside a `<TesseraProvider>` it signs in with the provider's
 * client, so `useSession()` follows.
 *
 * @example
 * ```tsx
 * import { SignIn, TesseraProvider } from '@tessera/react';
 *
 * <TesseraProvider client={client}>
 *   <SignIn onSignedIn={() => navigate('/')} />
 * </TesseraProvider>
 * ```
 */
export function SignIn(props: SignInProps): ReactNode {
  const ref = useRef<TesseraSignIn | null>(null);
  const context = useOptionalTesseraContext();
  const client = props.client ?? (context?.client as TesseraClient | undefined);
  const callbacks = useRef(props);
  callbacks.current = props;

  // Before the browser paints: an element already defined must not show "not set up" meanwhile.
  useLayoutEffect(() => {
    const element = ref.current;
    if (!element) return;
    let live = true;
    void import('@tessera/ui').then(() => {
      if (!live) return;
      if (props.messages) element.messages = props.messages;
      if (props.branding) element.branding = props.branding;
      if (client) element.client = client;
    });
    return () => {
      live = false;
    };
  }, [client, props.messages, props.branding]);

  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    const signedIn = (e: Event) => callbacks.current.onSignedIn?.((e as CustomEvent<SignedInDetail>).detail);
    const error = (e: Event) => callbacks.current.onError?.((e as CustomEvent<ErrorDetail>).detail);
    const step = (e: Event) => callbacks.current.onStep?.((e as CustomEvent<{ step: Step }>).detail.step);
    element.addEventListener('signed-in', signedIn);
    element.addEventListener('error', error);
    element.addEventListener('step', step);
    return () => {
      element.removeEventListener('signed-in', signedIn);
      element.removeEventListener('error', error);
      element.removeEventListener('step', step);
    };
  }, []);

  return createElement('tessera-sign-in', {
    ref,
    class: props.className,
    style: props.style,
    ...(!client && props.issuer && { issuer: props.issuer }),
    ...(!client && props.apiKeyId && { 'api-key-id': props.apiKeyId }),
    ...(props.locale && { locale: props.locale }),
    ...(props.theme && { theme: props.theme }),
    ...(props.getOAuthToken === false && { 'get-oauth-token': 'false' }),
    ...(props.offers === false && { offers: 'none' }),
  });
}
